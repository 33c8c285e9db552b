/// An error raised by the download engine for one task.
///
/// Cases are static members over a private code, so new kinds can be added without breaking callers.
/// Match a kind with `~=` (for example `catch DownloadError.permanentHTTPStatus`), read ``message`` for
/// the one-line explanation, and ``isRetryable`` to know whether the engine would try again.
public struct DownloadError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidURL
        case unsupportedScheme
        case permanentHTTPStatus
        case retryableHTTPStatus
        case tooManyRedirects
        case redirectWithoutLocation
        case network
        case malformedResponse
        case connectTimeout
        case connectFailed
        case tlsCertificate
        case tlsHandshake
        case idleTimeout
        case deadlineExceeded
        case prematureEndOfBody
        case unexpectedResponse
        case verificationFailed
        case destinationExists
        case fileSystem
        case corruptRecord
        case retriesExhausted
        case cancelled
        case unknownTask
        case invalidState
        case stateDirectoryLocked
        case invalidHeader
        case invalidInputList
        case credentialsRequired
        case invalidProxy
        case slowTransfer
        case tooSlow
        case unprocessed
    }

    private let code: Code

    /// What went wrong, in one line, naming the culprit.
    public let message: String

    /// The HTTP status involved, when the error came from a response.
    public let status: Int?

    private init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// The URL cannot be parsed or has no host.
    public static func invalidURL(_ url: String) -> DownloadError {
        .init(.invalidURL, "invalid URL '\(url)'")
    }

    /// The URL's scheme is not `http` or `https`.
    public static func unsupportedScheme(_ url: String) -> DownloadError {
        .init(.unsupportedScheme, "unsupported URL scheme in '\(url)' (only http and https)")
    }

    /// The server answered with a status the engine does not retry (most 4xx, 501, unknown 3xx).
    public static func permanentHTTPStatus(_ status: Int, url: String) -> DownloadError {
        .init(.permanentHTTPStatus, "HTTP \(status) from \(url)", status: status)
    }

    /// The server answered with a retryable status (408, 429, 500, 502, 503, 504).
    public static func retryableHTTPStatus(_ status: Int, url: String) -> DownloadError {
        .init(.retryableHTTPStatus, "HTTP \(status) from \(url)", status: status)
    }

    /// More redirect hops than ``DownloadConfiguration/RedirectPolicy/maximumHops`` allows.
    public static func tooManyRedirects(_ hops: Int, url: String) -> DownloadError {
        .init(.tooManyRedirects, "too many redirects (more than \(hops)) starting at \(url)")
    }

    /// An HTTP proxy answered with a refusal of its own: to a `CONNECT`, or, for an `http://` URL, a `407` or an error
    /// response it marks as its own (`Proxy-Status` with an error, squid's `X-Squid-Error`).
    ///
    /// Permanent, as ``permanentHTTPStatus(_:url:)`` is, unless the status is one that passes (`408`, `429`, `502`,
    /// `503`, `504`): asking the same proxy again gets the same `403`, `407` or `500`.
    ///
    /// - Parameters:
    ///   - status: The proxy's status.
    ///   - proxy: The proxy, `HOST:PORT`, never its credentials.
    ///   - detail: What was refused and why, in a few words.
    public static func proxyRefused(_ status: Int, proxy: String, detail: String) -> DownloadError {
        .init(
            proxyRetryableStatuses.contains(status) ? .retryableHTTPStatus : .permanentHTTPStatus,
            "HTTP \(status) from proxy \(proxy): \(detail)", status: status)
    }

    /// The statuses of a proxy's own answer that are retried: a timeout, a rate limit, and a next hop it could not
    /// reach (``proxyRefused(_:proxy:detail:)``).
    static let proxyRetryableStatuses: Set<Int> = [408, 429, 502, 503, 504]

    /// A 3xx redirect status came without a usable `Location` header.
    public static func redirectWithoutLocation(_ status: Int, url: String) -> DownloadError {
        .init(.redirectWithoutLocation, "HTTP \(status) from \(url) without a valid Location", status: status)
    }

    /// The connection failed or was reset; the message carries the transport's description.
    public static func network(_ detail: String) -> DownloadError {
        .init(.network, "network error: \(detail)")
    }

    /// The server's response could not be parsed (a bad status line or header, an oversized head, both
    /// `Transfer-Encoding` and `Content-Length`, broken chunked framing). Retried like a network error: a proxy or a
    /// server may send garbage once and a good response the next time; a task gives up after three in a row that
    /// brought no byte (see ``unexpectedResponse(_:)``).
    public static func malformedResponse(_ detail: String) -> DownloadError {
        .init(.malformedResponse, "malformed HTTP response: \(detail)")
    }

    /// The TCP connection was refused or failed before it was established (not a timeout). Retried like a network
    /// error.
    public static func connectFailed(_ peer: String, _ detail: String) -> DownloadError {
        .init(.connectFailed, "connect \(peer): \(detail)")
    }

    /// The server's TLS certificate was not accepted (not from a trusted CA, expired, or for another host name).
    /// Permanent: asking again gets the same certificate.
    public static func tlsCertificate(_ peer: String, _ detail: String) -> DownloadError {
        .init(.tlsCertificate, "TLS certificate of \(peer) not accepted: \(detail)")
    }

    /// The TLS handshake failed for another reason (the server aborted it with an alert, no common protocol).
    /// Retried like a network error, within the retry policy's limit.
    public static func tlsHandshake(_ peer: String, _ detail: String) -> DownloadError {
        .init(.tlsHandshake, "TLS handshake with \(peer) failed: \(detail)")
    }

    /// Pattern matching any ``tlsCertificate(_:_:)`` error.
    public static let tlsCertificate = DownloadError(.tlsCertificate, "")
    /// Pattern matching any ``tlsHandshake(_:_:)`` error.
    public static let tlsHandshake = DownloadError(.tlsHandshake, "")

    /// The TCP connection could not be established within the connect timeout.
    public static func connectTimeout(_ url: String) -> DownloadError {
        .init(.connectTimeout, "connect timeout for \(url)")
    }

    /// The TCP connection was made but the TLS handshake did not finish within the connect timeout, which covers
    /// both. A connect timeout by kind: a server that accepts and never answers is as down as one that never
    /// accepts.
    public static func tlsHandshakeTimeout(_ url: String) -> DownloadError {
        .init(.connectTimeout, "connect timeout for \(url): the TLS handshake did not finish")
    }

    /// Pattern matching any ``connectTimeout(_:)`` or ``tlsHandshakeTimeout(_:)`` error.
    public static let connectTimeout = DownloadError(.connectTimeout, "")

    /// No body bytes arrived for the idle timeout.
    public static func idleTimeout(_ seconds: Double) -> DownloadError {
        .init(.idleTimeout, "no data received for \(formatSeconds(seconds))")
    }

    /// An attempt brought less than the ``DownloadConfiguration/LowSpeedLimit`` over its window and was aborted, to be
    /// resumed where it stood: the error of a `retrying` event.
    public static func slowTransfer(bytesPerSecond: Int64, seconds: Double) -> DownloadError {
        .init(.slowTransfer, "slower than \(formatRate(bytesPerSecond)) for \(formatSeconds(seconds))")
    }

    /// The server closed the request's HTTP/2 stream before answering it, saying it was not processed: RST_STREAM
    /// REFUSED_STREAM, or the stream cancelled under a GOAWAY whose last-stream-id is below it (RFC 9113 §8.7). The
    /// request is sent again at once, within the retry budget.
    public static func unprocessed(_ detail: String) -> DownloadError {
        .init(.unprocessed, "not processed by the server: \(detail)")
    }

    /// The download aborted more slow attempts than ``DownloadConfiguration/LowSpeedLimit/maximumAborts`` allows.
    ///
    /// - Parameters:
    ///   - aborts: The slow attempts aborted, this one included.
    ///   - bytesPerSecond: The low-speed limit.
    ///   - seconds: Its window.
    public static func tooSlow(aborts: Int, bytesPerSecond: Int64, seconds: Double) -> DownloadError {
        .init(
            .tooSlow,
            "too slow: \(aborts) attempt\(aborts == 1 ? " was" : "s were") slower than \(formatRate(bytesPerSecond)) "
                + "for \(formatSeconds(seconds)), more slow aborts than the \(aborts - 1) allowed")
    }

    /// The task's overall deadline passed.
    public static func deadlineExceeded(_ seconds: Double) -> DownloadError {
        .init(.deadlineExceeded, "overall deadline of \(formatSeconds(seconds)) exceeded")
    }

    /// The body ended before the announced length.
    public static func prematureEndOfBody(received: Int64, expected: Int64) -> DownloadError {
        .init(.prematureEndOfBody, "body ended after \(received) of \(expected) bytes")
    }

    /// The response contradicts the request in a way the engine cannot repair (for example a garbled `Content-Range`).
    public static func unexpectedResponse(_ detail: String) -> DownloadError {
        .init(.unexpectedResponse, "unexpected response: \(detail)")
    }

    /// The downloaded length or SHA-256 digest does not match what was expected; the partial file was discarded.
    public static func verificationFailed(_ detail: String) -> DownloadError {
        .init(.verificationFailed, "verification failed: \(detail)")
    }

    /// The destination already exists and overwriting was not requested.
    public static func destinationExists(_ path: String) -> DownloadError {
        .init(.destinationExists, "destination '\(path)' already exists (use overwrite to replace it)")
    }

    /// A file operation failed (unwritable directory, disk full, ...); the message names the call and the path.
    public static func fileSystem(_ detail: String) -> DownloadError {
        .init(.fileSystem, detail)
    }

    /// A task record in the state directory could not be read; it was renamed aside, not deleted.
    public static func corruptRecord(_ path: String, movedTo: String) -> DownloadError {
        .init(.corruptRecord, "corrupt task record '\(path)' set aside as '\(movedTo)'")
    }

    /// The retry budget ran out; the message carries the last error.
    public static func retriesExhausted(_ attempts: Int, last: DownloadError) -> DownloadError {
        .init(.retriesExhausted, "gave up after \(attempts) retries: \(last.message)", status: last.status)
    }

    /// The task was cancelled.
    public static let cancelled = DownloadError(.cancelled, "cancelled")

    /// No task with that identifier exists in the engine.
    public static func unknownTask(_ id: String) -> DownloadError {
        .init(.unknownTask, "no task with id \(id)")
    }

    /// The operation is not allowed in the task's current state (for example resuming a completed task).
    public static func invalidState(_ detail: String) -> DownloadError {
        .init(.invalidState, detail)
    }

    /// Another engine, in this process or another, holds the state directory's lock (see `docs/engine.md`).
    ///
    /// - Parameters:
    ///   - directory: The absolute state directory.
    ///   - pid: The holder's PID as its lock file records it; `nil` when the holder has not written it yet.
    public static func stateDirectoryLocked(_ directory: String, by pid: Int32?) -> DownloadError {
        let holder = pid.map { "process \($0)" } ?? "another process"
        return .init(.stateDirectoryLocked, "state directory '\(directory)' is in use by \(holder)")
    }

    /// Pattern matching any ``stateDirectoryLocked(_:by:)`` error.
    public static let stateDirectoryLocked = DownloadError(.stateDirectoryLocked, "")

    /// A request header that cannot be sent: malformed (no colon, a name that is not an HTTP token, a line break in
    /// the value) or one the engine sets itself (`Range`, `If-Range`, `Accept-Encoding`, `Host`, ...).
    public static func invalidHeader(_ detail: String) -> DownloadError {
        .init(.invalidHeader, detail)
    }

    /// Pattern matching any ``invalidHeader(_:)`` error.
    public static let invalidHeader = DownloadError(.invalidHeader, "")

    /// A line of a URL list (``InputList``) that cannot be read; the detail starts with `SOURCE:LINE:`.
    public static func invalidInputList(_ detail: String) -> DownloadError {
        .init(.invalidInputList, detail)
    }

    /// Pattern matching any ``invalidInputList(_:)`` error.
    public static let invalidInputList = DownloadError(.invalidInputList, "")

    /// A task resumed from the state directory was started with credential headers (`Authorization`, `Cookie`,
    /// `Proxy-Authorization`) that were not stored (see ``DownloadRequest/storesCredentials``), and they were not
    /// given again: the engine does not resume it without them.
    ///
    /// - Parameter names: The headers to give again.
    public static func credentialsRequired(_ names: [String]) -> DownloadError {
        .init(
            .credentialsRequired,
            "resuming needs the header\(names.count == 1 ? "" : "s") \(names.joined(separator: ", ")) again: "
                + "\(names.count == 1 ? "it was" : "they were") not stored with the task")
    }

    /// Pattern matching any ``credentialsRequired(_:)`` error.
    public static let credentialsRequired = DownloadError(.credentialsRequired, "")

    /// A proxy setting that cannot be used: a URL that is not `http://host[:port]`, or a proxy environment
    /// variable holding one.
    public static func invalidProxy(_ detail: String) -> DownloadError {
        .init(.invalidProxy, detail)
    }

    /// Pattern matching any ``invalidProxy(_:)`` error.
    public static let invalidProxy = DownloadError(.invalidProxy, "")

    /// Shorthand patterns for matching with `~=` without building a message.
    public static let invalidURL = DownloadError(.invalidURL, "")
    /// Pattern matching any ``unsupportedScheme(_:)`` error.
    public static let unsupportedScheme = DownloadError(.unsupportedScheme, "")
    /// Pattern matching any ``permanentHTTPStatus(_:url:)`` error.
    public static let permanentHTTPStatus = DownloadError(.permanentHTTPStatus, "")
    /// Pattern matching any ``tooManyRedirects(_:url:)`` error.
    public static let tooManyRedirects = DownloadError(.tooManyRedirects, "")
    /// Pattern matching any ``verificationFailed(_:)`` error.
    public static let verificationFailed = DownloadError(.verificationFailed, "")
    /// Pattern matching any ``destinationExists(_:)`` error.
    public static let destinationExists = DownloadError(.destinationExists, "")
    /// Pattern matching any ``fileSystem(_:)`` error.
    public static let fileSystem = DownloadError(.fileSystem, "")
    /// Pattern matching any ``corruptRecord(_:movedTo:)`` error.
    public static let corruptRecord = DownloadError(.corruptRecord, "")
    /// Pattern matching any ``retriesExhausted(_:last:)`` error.
    public static let retriesExhausted = DownloadError(.retriesExhausted, "")
    /// Pattern matching any ``malformedResponse(_:)`` error.
    public static let malformedResponse = DownloadError(.malformedResponse, "")
    /// Pattern matching any ``idleTimeout(_:)`` error.
    public static let idleTimeout = DownloadError(.idleTimeout, "")
    /// Pattern matching any ``deadlineExceeded(_:)`` error.
    public static let deadlineExceeded = DownloadError(.deadlineExceeded, "")
    /// Pattern matching any ``slowTransfer(bytesPerSecond:seconds:)`` error.
    public static let slowTransfer = DownloadError(.slowTransfer, "")
    /// Pattern matching any ``tooSlow(aborts:bytesPerSecond:seconds:)`` error.
    public static let tooSlow = DownloadError(.tooSlow, "")
    /// Pattern matching any ``unprocessed(_:)`` error.
    public static let unprocessed = DownloadError(.unprocessed, "")

    /// Whether no connection could be made (a timeout, a refusal): the host named by the URL is down or unreachable,
    /// so a redirect target that fails this way is an edge to leave (the engine resolves the original URL again).
    public var isConnectFailure: Bool { code == .connectTimeout || code == .connectFailed }

    /// Whether the engine retries after this error (from the current offset).
    public var isRetryable: Bool {
        switch code {
        case .network, .malformedResponse, .connectTimeout, .connectFailed, .tlsHandshake, .idleTimeout,
            .prematureEndOfBody, .retryableHTTPStatus, .slowTransfer, .unprocessed:
            true
        default: false
        }
    }

    /// A short stable name of the kind, used in JSON events and logs (for example `permanent-http-status`).
    public var kind: String {
        switch code {
        case .invalidURL: "invalid-url"
        case .unsupportedScheme: "unsupported-scheme"
        case .permanentHTTPStatus: "permanent-http-status"
        case .retryableHTTPStatus: "retryable-http-status"
        case .tooManyRedirects: "too-many-redirects"
        case .redirectWithoutLocation: "redirect-without-location"
        case .network: "network"
        case .malformedResponse: "malformed-response"
        case .connectTimeout: "connect-timeout"
        case .connectFailed: "connect-failed"
        case .tlsCertificate: "tls-certificate"
        case .tlsHandshake: "tls-handshake"
        case .idleTimeout: "idle-timeout"
        case .deadlineExceeded: "deadline-exceeded"
        case .prematureEndOfBody: "premature-end-of-body"
        case .unexpectedResponse: "unexpected-response"
        case .verificationFailed: "verification-failed"
        case .destinationExists: "destination-exists"
        case .fileSystem: "file-system"
        case .corruptRecord: "corrupt-record"
        case .retriesExhausted: "retries-exhausted"
        case .cancelled: "cancelled"
        case .unknownTask: "unknown-task"
        case .invalidState: "invalid-state"
        case .stateDirectoryLocked: "state-directory-locked"
        case .invalidHeader: "invalid-header"
        case .invalidInputList: "invalid-input-list"
        case .credentialsRequired: "credentials-required"
        case .invalidProxy: "invalid-proxy"
        case .slowTransfer: "slow-transfer"
        case .tooSlow: "too-slow"
        case .unprocessed: "unprocessed"
        }
    }

    /// Two errors are the same kind when their codes match, whatever the message.
    public static func ~= (pattern: DownloadError, value: any Error) -> Bool {
        (value as? DownloadError)?.code == pattern.code
    }

    /// The one-line message.
    public var description: String { message }
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
}

/// A rate as written on the command line: `256K/s`, `2M/s`, or bytes (`1000/s`).
func formatRate(_ bytesPerSecond: Int64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] where bytesPerSecond % (1 << shift) == 0 {
        return "\(bytesPerSecond >> shift)\(unit)/s"
    }
    return "\(bytesPerSecond)/s"
}
