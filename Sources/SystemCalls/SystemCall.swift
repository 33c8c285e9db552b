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

/// Writes every byte to a descriptor, retrying interrupted and short writes.
///
/// - Parameters:
///   - descriptor: An open file descriptor.
///   - bytes: The bytes to write.
/// - Throws: ``SystemCallError`` for `write`; a write that makes no progress reports `EIO`.
@inlinable
public func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
    guard let base = bytes.baseAddress else { return }
    var offset = 0
    while offset < bytes.count {
        let written = try systemCall("write") { write(descriptor, base + offset, bytes.count - offset) }
        if written == 0 { throw SystemCallError(call: "write", errno: .ioError) }
        offset += written
    }
}

/// Reads `errno`; a function so inlinable code does not name the C library's thread-local macro.
@usableFromInline
func currentErrno() -> Int32 {
    errno
}
