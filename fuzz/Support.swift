/// Shared helpers for the libFuzzer targets in `fuzz/targets/`.
///
/// Each target is compiled together with the pure server sources it exercises (see `fuzz/build`), so it
/// can reach internal API. A broken invariant traps, which libFuzzer records as a crash with its input.

/// Stops the run with a message when an invariant does not hold.
///
/// - Parameters:
///   - condition: the invariant.
///   - message: what was expected, evaluated only on failure.
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("invariant violated: \(message())")
    }
}

/// The fuzzer's input as a byte array.
///
/// - Parameters:
///   - start: the input buffer.
///   - count: its length.
/// - Returns: a copy of the bytes.
func fuzzBytes(_ start: UnsafeRawPointer?, _ count: Int) -> [UInt8] {
    guard let start, count > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: start, count: count))
}

/// The fuzzer's input as text; invalid UTF-8 becomes U+FFFD, as it would in a decoded header.
///
/// - Parameters:
///   - start: the input buffer.
///   - count: its length.
/// - Returns: the decoded text.
func fuzzText(_ start: UnsafeRawPointer?, _ count: Int) -> String {
    String(decoding: fuzzBytes(start, count), as: UTF8.self)
}
