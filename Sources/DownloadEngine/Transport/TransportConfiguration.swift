import Logging
import NIOCore

/// What the engine's ``HTTPTransport`` needs to know besides the request: timeouts, pooling, TLS trust and a proxy.
///
/// Built from ``DownloadConfiguration``: one AsyncHTTPClient `HTTPClient` for direct requests and one ``ProxyClient``
/// for requests through proxies share it.
struct TransportConfiguration: Sendable {
    /// How long establishing a connection (TCP connect, and for `https://` the TLS handshake) may take.
    var connectTimeout: Duration = .seconds(10)
    /// Idle kept-alive connections kept per scheme, host and port (through a proxy: per proxy, and per tunnel), at
    /// most.
    var connectionsPerHost: Int = 8
    /// How long a kept-alive connection may sit idle in the pool before it is closed.
    var idleConnectionTimeout: Duration = .seconds(60)
    /// Which server certificates `https://` accepts.
    var trust: DownloadConfiguration.TLSTrust = .system
    /// Which proxy each request goes through: `http://` ones in absolute form, `https://` ones through `CONNECT`.
    var proxy: DownloadConfiguration.Proxy = .direct
    /// Where AsyncHTTPClient logs (the engine's logger); `nil` logs nothing. The proxy client logs nothing itself:
    /// no header, and so no credential, reaches a log.
    var logger: Logger?
    /// Whether `https://` may negotiate HTTP/2.
    var httpVersion: DownloadConfiguration.HTTPVersion = .automatic

    var connectTimeAmount: TimeAmount { TimeAmount(connectTimeout) }
}
