/// A redirect step's target on another listener of this server: `blackhole:/PATH`, `http:/PATH`, `https:/PATH` or
/// `tls:FAULT:/PATH`.
///
/// Route names and plain paths redirect on the listener the request came in on; these prefixes send the client to
/// the blackhole listener, to the plain or the TLS port (an upgrade or a downgrade), or to one of the TLS fault
/// listeners (whose path is served if the client ever gets through).
public struct ScenarioRedirect: Hashable, Sendable {
    /// Which listener.
    public enum Kind: Hashable, Sendable {
        /// The listener that never accepts.
        case blackhole
        /// The plain HTTP port.
        case http
        /// The TLS port.
        case https
        /// A TLS fault listener.
        case tlsFault(TLSFault)

        /// The URL scheme a client uses there.
        public var scheme: String {
            switch self {
            case .blackhole, .http: "http"
            case .https, .tlsFault: "https"
            }
        }
    }

    /// The listener.
    public var kind: Kind
    /// The path (and query) asked for there, starting with `/`.
    public var path: String

    /// How a listener target is written, for error messages.
    static let grammar =
        "blackhole:/PATH, http:/PATH, https:/PATH or tls:FAULT:/PATH with FAULT one of "
        + TLSFault.allCases.map(\.rawValue).joined(separator: ", ") + ", e.g. tls:handshake-stall:/bytes/4M"

    /// Whether `target` starts like a listener target (so a malformed one is reported, not taken for a route name).
    static func hasListenerPrefix(_ target: String) -> Bool {
        ["blackhole:", "http:", "https:", "tls:"].contains { target.hasPrefix($0) }
    }

    /// Parses a listener target; nil when `target` is a route name, a plain path or malformed.
    public init?(_ target: String) {
        let kind: Kind
        var rest: Substring
        if target.hasPrefix("blackhole:") {
            (kind, rest) = (.blackhole, target.dropFirst("blackhole:".count))
        } else if target.hasPrefix("https:") {
            (kind, rest) = (.https, target.dropFirst("https:".count))
        } else if target.hasPrefix("http:") {
            (kind, rest) = (.http, target.dropFirst("http:".count))
        } else if target.hasPrefix("tls:") {
            rest = target.dropFirst("tls:".count)
            guard let colon = rest.firstIndex(of: ":"), let fault = TLSFault(rawValue: String(rest[..<colon])) else {
                return nil
            }
            kind = .tlsFault(fault)
            rest = rest[rest.index(after: colon)...]
        } else {
            return nil
        }
        guard rest.hasPrefix("/"), !rest.hasPrefix("//"), !rest.contains(where: { $0.isWhitespace || $0.isNewline })
        else { return nil }
        self.kind = kind
        self.path = String(rest)
    }
}
