/// The wire a matrix run hands its URLs out over: the server's port for it, and what each tag of a row means there.
public enum MatrixScheme: String, CaseIterable, Codable, Sendable {
    /// HTTP/1.1 on the plain port.
    case http
    /// HTTP/1.1 over TLS on the TLS port.
    case https
    /// HTTP/2 over TLS on the `--h2-port` listener (ALPN offers `h2` and `http/1.1`).
    case h2
    /// Cleartext HTTP/2 with prior knowledge on the `--h2c-port` listener.
    case h2c

    /// Whether the client is given `https:` URLs and the server's CA.
    public var isTLS: Bool { self == .https || self == .h2 }
    /// Whether the URLs lead to an HTTP/2 listener.
    public var isHTTP2: Bool { self == .h2 || self == .h2c }
    /// The URL scheme the client is given.
    public var urlScheme: String { isTLS ? "https" : "http" }

    /// Why `entry` does not run over this scheme, from its tags: `http-only` (a plain-text HTTP/1.1 fault: `http`
    /// only), `http1-only` (a fault HTTP/2 cannot carry: `http` and `https` only), `h2-only` (an HTTP/2 fault:
    /// `h2` and `h2c` only); nil when it runs.
    public func exclusion(of entry: CatalogueEntry) -> String? {
        let tags = entry.expectation.tags
        if tags.contains("http-only") && self != .http {
            return "the row's fault works on plain http only (tagged http-only)"
        }
        if tags.contains("http1-only") && isHTTP2 {
            return "the row's fault works over HTTP/1.1 only (tagged http1-only)"
        }
        if tags.contains("h2-only") && !isHTTP2 {
            return "the row's fault works over HTTP/2 only (tagged h2-only)"
        }
        return nil
    }
}
