/// An error raised by the range server: start-up failures, bad configuration and bad input files.
///
/// Cases are static members over a private code, so new ones can be added without breaking callers.
public struct RangeServerError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case bindFailed
        case daemonStartFailed
        case invalidConfiguration
        case missingRoot
        case invalidScenario
        case journalFile
        case invalidFault
        case tlsCertificate
    }

    private let code: Code

    /// What went wrong, in one line, naming the culprit.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The listening socket could not be opened (address in use, permission, bad host).
    public static func bindFailed(_ message: String) -> RangeServerError { .init(.bindFailed, message) }

    /// libmicrohttpd refused to start.
    public static func daemonStartFailed(_ message: String) -> RangeServerError { .init(.daemonStartFailed, message) }

    /// A configuration value is out of range or inconsistent.
    public static func invalidConfiguration(_ message: String) -> RangeServerError {
        .init(.invalidConfiguration, message)
    }

    /// The `--root` directory does not exist or is not a directory.
    public static func missingRoot(_ message: String) -> RangeServerError { .init(.missingRoot, message) }

    /// A scenario file could not be read or is malformed; the message names the file, line and reason.
    public static func invalidScenario(_ message: String) -> RangeServerError { .init(.invalidScenario, message) }

    /// The journal file could not be opened or written.
    public static func journalFile(_ message: String) -> RangeServerError { .init(.journalFile, message) }

    /// A fault query parameter is unknown or has a bad value; the message names the key and the value.
    ///
    /// The server answers such a request with 400 and this message.
    public static func invalidFault(_ message: String) -> RangeServerError { .init(.invalidFault, message) }

    /// A TLS certificate or key could not be read, made or used: a missing or unreadable file, text that is not PEM,
    /// a key that does not belong to its certificate, a name no certificate can carry.
    public static func tlsCertificate(_ message: String) -> RangeServerError { .init(.tlsCertificate, message) }

    /// Two errors are the same kind when their codes match, whatever the message.
    public static func ~= (pattern: RangeServerError, value: any Error) -> Bool {
        (value as? RangeServerError)?.code == pattern.code
    }

    public var description: String { message }
}
