import Logging
import NIOCore

/// What the engine's ``HTTPTransport`` needs to know besides the request: timeouts, pooling, TLS trust and a proxy.
///
/// Built from ``DownloadConfiguration``. AsyncHTTPClient sets trust and proxy per `HTTPClient`, so one configuration
/// is one direct client plus one client per proxy that a request was sent through.
struct TransportConfiguration: Sendable {
    /// How long establishing a connection (TCP connect, and for `https://` the TLS handshake) may take.
    var connectTimeout: Duration = .seconds(10)
    /// Idle kept-alive connections kept per scheme, host and port, at most.
    var connectionsPerHost: Int = 8
    /// Which server certificates `https://` accepts.
    var trust: DownloadConfiguration.TLSTrust = .system
    /// Which proxy each request goes through (`http://` ones too, through `CONNECT`: AsyncHTTPClient only tunnels).
    var proxy: DownloadConfiguration.Proxy = .direct
    /// Where AsyncHTTPClient logs (the engine's logger); `nil` logs nothing.
    var logger: Logger?

    var connectTimeAmount: TimeAmount {
        let (seconds, attoseconds) = connectTimeout.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
