import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a system call that reports failure as -1 with `errno`, repeating it while a signal interrupts it (`EINTR`).
///
/// The one place the package retries interrupted calls and turns `errno` into an error. It is generic and inlinable
/// and throws a typed error, so a successful call costs what the bare call costs: no existential, no allocation
/// (the name is a `StaticString` until it is needed for an error).
///
/// - Parameters:
///   - name: The call's name, for the error.
///   - body: The call; its result is returned unless it is -1.
/// - Returns: The call's result.
/// - Throws: ``SystemCallError`` naming the call and carrying its `errno`.
@inlinable
@discardableResult
public func systemCall<Result: FixedWidthInteger>(
    _ name: StaticString, _ body: () -> Result
) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Errno(rawValue: currentErrno())
        if code == .interrupted { continue }
        throw SystemCallError(call: name.description, errno: code)
    }
}

/// Writes every byte to a descriptor, retrying interrupted and short writes: with `write`, or with `pwrite` from
/// `offset` on when one is given.
///
/// - Parameters:
///   - descriptor: An open file descriptor.
///   - bytes: The bytes to write.
///   - offset: Where in the file the bytes go; `nil` writes at the descriptor's position.
/// - Throws: ``SystemCallError`` for `write` or `pwrite`; a write that makes no progress reports `EIO`.
@inlinable
public func writeAll(
    _ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil
)
    throws(SystemCallError)
{
    guard let base = bytes.baseAddress else { return }
    var done = 0
    while done < bytes.count {
        let written: Int
        if let offset {
            written = try systemCall("pwrite") {
                pwrite(descriptor, base + done, bytes.count - done, off_t(offset) + off_t(done))
            }
        } else {
            written = try systemCall("write") { write(descriptor, base + done, bytes.count - done) }
        }
        if written == 0 { throw SystemCallError(call: offset == nil ? "write" : "pwrite", errno: .ioError) }
        done += written
    }
}

/// Reads `errno`; a function so inlinable code does not name the C library's thread-local macro.
@usableFromInline
func currentErrno() -> Int32 {
    errno
}
