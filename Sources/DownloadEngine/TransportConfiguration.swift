import Logging
import NIOCore

/// What the engine's ``HTTPTransport`` needs to know besides the request: timeouts, pooling, TLS trust and a proxy.
///
/// Built from ``DownloadConfiguration``. One configuration is one AsyncHTTPClient `HTTPClient`, since the client sets
/// trust and proxy for all its requests. The proxy setting is shaped for what comes next (an HTTP proxy, plain or
/// through `CONNECT`); until the transport implements it, ``HTTPTransport/execute(_:)`` throws a line naming it
/// rather than ignore it.
struct TransportConfiguration: Sendable {
    /// How long establishing a connection (TCP connect, and for `https://` the TLS handshake) may take.
    var connectTimeout: Duration = .seconds(10)
    /// Idle kept-alive connections kept per scheme, host and port, at most.
    var connectionsPerHost: Int = 8
    /// Which server certificates `https://` accepts.
    var trust: DownloadConfiguration.TLSTrust = .system
    /// The proxy every request goes through; `nil` connects directly.
    var proxy: ProxyConfiguration?
    /// Where AsyncHTTPClient logs (the engine's logger); `nil` logs nothing.
    var logger: Logger?

    /// An HTTP proxy.
    struct ProxyConfiguration: Sendable, Hashable {
        var host: String
        var port: Int
        /// Whether `http://` requests are tunnelled through `CONNECT` too (`https://` always is).
        var tunnelsPlainHTTP: Bool = false
    }

    var connectTimeAmount: TimeAmount {
        let (seconds, attoseconds) = connectTimeout.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
