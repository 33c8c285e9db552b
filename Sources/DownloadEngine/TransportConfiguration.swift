import NIOCore

/// What the engine's ``HTTPTransport`` needs to know besides the request: timeouts, pooling, TLS trust and a proxy.
///
/// Built from ``DownloadConfiguration``. The trust and proxy settings are shaped for what comes next (a custom CA,
/// an insecure mode for test servers, an HTTP proxy plain or through `CONNECT`); a setting the transport does not
/// implement yet makes ``HTTPTransport/execute(_:)`` throw a line naming it rather than be ignored.
struct TransportConfiguration: Sendable {
    /// How long a TCP connect (and, for `https://`, nothing more) may take.
    var connectTimeout: Duration = .seconds(10)
    /// Idle kept-alive connections kept per scheme, host and port, at most.
    var connectionsPerHost: Int = 8
    /// Which server certificates `https://` accepts.
    var trust: TLSTrust = .system
    /// The proxy every request goes through; `nil` connects directly.
    var proxy: ProxyConfiguration?

    /// Which server certificates are trusted.
    enum TLSTrust: Sendable, Hashable {
        /// The system's trust roots, with host name verification.
        case system
        /// Only these PEM-encoded certificates (a CA file's contents), with host name verification.
        case certificates(pem: String)
        /// Any certificate (test servers with self-signed certificates only).
        case insecure
    }

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
