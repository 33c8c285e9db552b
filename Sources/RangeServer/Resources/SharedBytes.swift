/// Bytes in memory that many responses read: the body of an encoded representation.
///
/// A class, so a response plan carries one reference; equal only to itself, as two encodings are two
/// representations even when their bytes agree.
final class SharedBytes: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Copies the bytes at `offset` into `target`; `false` when they run past the end.
    func read(offset: UInt64, into target: UnsafeMutableRawBufferPointer) -> Bool {
        guard offset <= UInt64(bytes.count), UInt64(target.count) <= UInt64(bytes.count) - offset else { return false }
        bytes.withUnsafeBytes { source in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[Int(offset)..<Int(offset) + target.count]))
        }
        return true
    }

    static func == (lhs: SharedBytes, rhs: SharedBytes) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
