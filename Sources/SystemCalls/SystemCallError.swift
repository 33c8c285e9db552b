import SystemPackage

/// A system call that failed, with the call's name and the `errno` it set.
public struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call as the caller named it, such as `open` or `pread`.
    public var call: String
    /// The error the call reported.
    public var errno: Errno

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - call: The call's name.
    ///   - errno: The error it reported.
    public init(call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// `call: reason`, such as `open: No such file or directory`.
    public var description: String {
        "\(call): \(reason)"
    }

    /// The C library's text for the error, such as `No such file or directory`.
    public var reason: String {
        errno.description
    }
}
