/// A request as received, before any HTTP decision: a front end builds it, the router reads it.
struct IncomingRequest: Sendable {
    /// The method token, as sent.
    var method: String
    /// The request target exactly as received (path and query, still percent-encoded).
    var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    var httpVersion: String
    /// Header fields in arrival order, names as sent (looked up in any case: `header(_:)`, `HeaderField.hasName`).
    var headers: [HeaderField]
    /// The peer's numeric address.
    var peerAddress: String
    /// The peer's port.
    var peerPort: Int = 0
    /// A per-connection number, so tests can tell connections apart.
    var connectionID: Int
    /// The server-wide order in which requests arrived (see `JournalEntry.arrival`).
    var arrival: Int = 0
    /// When the headers arrived, in nanoseconds since 1970 (wall clock; see `JournalEntry.arrivalTime`).
    var arrivalTime: Int64 = 0
    /// The scenario attempt counted at arrival, for a GET of an existing scenario route (see `RequestContext`).
    var reservedAttempt: Int?
    /// Whether the request came in on a TLS port.
    var isTLS = false
    /// The exchange's connection, as far as the router may ask about it (see ``ExchangeConnection``).
    var connection: any ExchangeConnection = UnattachedConnection()
    /// The request body, kept only for a custom route (every other body is read and discarded).
    var body: [UInt8] = []
    /// Whether the body was longer than the route's limit, and so was not kept.
    var bodyTooLarge = false
    /// The HTTP/2 stream the request came on (client streams are odd, from 1); 0 over HTTP/1.1.
    var stream = 0
    /// The protocol the connection's TLS handshake chose by ALPN; nil without TLS or without ALPN.
    var alpn: String?
    /// The protocols the client's ClientHello offered by ALPN, in its order; nil when none were seen.
    var alpnOffered: [String]?
    /// A moment by which the whole request had been read from its socket, when the front end knows one: the HTTP/2
    /// front end gives the moment its latest socket read had returned when the request's last frame was handled
    /// (`SocketReadClock`). The file cache's change watch reads its queue once per such moment, not once per request.
    var readBy: ContinuousClock.Instant?

    /// `address:port`, with IPv6 addresses in brackets, as the journal records the peer.
    var peerDescription: String { Self.peerDescription(address: peerAddress, port: peerPort) }

    /// `address:port`, with IPv6 addresses in brackets.
    static func peerDescription(address: String, port: Int) -> String {
        address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// The target before `?`, still encoded; an absolute-form target is reduced to its path first.
    var rawPath: Substring { pathAndQuery.path }

    /// The target after `?`, still encoded; empty when there is none.
    var rawQuery: Substring { pathAndQuery.query }

    /// `rawPath` and `rawQuery` from one reading of the target: the router needs both, and reading them one at a
    /// time reduced the target to origin form and searched it for `?` twice per request.
    var pathAndQuery: (path: Substring, query: Substring) {
        let target = originForm
        // Searched as bytes: a Character search walks grapheme clusters.
        guard let mark = target.utf8Offset(of: UInt8(ascii: "?")) else { return (target, "") }
        let question = target.utf8.index(target.utf8.startIndex, offsetBy: mark)
        return (target[..<question], target[target.utf8.index(after: question)...])
    }

    /// The target in origin form (`/path?query`).
    ///
    /// RFC 9112 §3.2.2 requires a server to accept the absolute form (`http://host:port/path?query`) too; its
    /// scheme and authority are dropped here (the path is what names the resource), and an empty path is `/`.
    private var originForm: Substring {
        let utf8 = target.utf8
        // Nearly every target is already in origin form; answer those without looking for a scheme.
        if utf8.first == UInt8(ascii: "/") { return Substring(target) }
        let schemeLength: Int
        if utf8.count >= 7, utf8.prefix(7).map({ $0 | 0x20 }).elementsEqual("http://".utf8) {
            schemeLength = 7
        } else if utf8.count >= 8, utf8.prefix(8).map({ $0 | 0x20 }).elementsEqual("https://".utf8) {
            schemeLength = 8
        } else {
            return target[...]
        }
        let authorityStart = utf8.index(utf8.startIndex, offsetBy: schemeLength)
        let authorityEnd = utf8[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
        guard let pathStart = authorityEnd, utf8[pathStart] == UInt8(ascii: "/") else { return "/" }
        return target[pathStart...]
    }

    /// The field value for `name`, matched in any case; repeated fields are joined with ", " as RFC 9110 allows.
    func header(_ name: String) -> String? {
        var result: String?
        for field in headers where field.hasName(name) { Self.join(&result, field.value) }
        return result
    }

    /// Adds a repeated field's value the way HTTP combines them: comma-separated, in order.
    private static func join(_ slot: inout String?, _ value: String) {
        slot = slot.map { $0 + ", " + value } ?? value
    }

    /// The fields the conditional-request decision and the digest read, found in one pass over the headers
    /// (seven `header(_:)` calls walked them seven times); repeated fields are joined as `header(_:)` does.
    var conditionalFields: (conditional: ConditionalRequest, wantReprDigest: String?) {
        var range, ifRange, ifMatch, ifNoneMatch, ifModifiedSince, ifUnmodifiedSince, wantReprDigest: String?
        for field in headers {
            // The length first: most fields (Host, User-Agent, Accept) have none of these lengths, and a string
            // comparison that fails costs a call into the runtime, seven of them per field.
            switch field.name.utf8.count {
            case 5 where field.hasName(lowercased: "range"): Self.join(&range, field.value)
            case 8 where field.hasName(lowercased: "if-range"): Self.join(&ifRange, field.value)
            case 8 where field.hasName(lowercased: "if-match"): Self.join(&ifMatch, field.value)
            case 13 where field.hasName(lowercased: "if-none-match"): Self.join(&ifNoneMatch, field.value)
            case 16 where field.hasName(lowercased: "want-repr-digest"): Self.join(&wantReprDigest, field.value)
            case 17 where field.hasName(lowercased: "if-modified-since"): Self.join(&ifModifiedSince, field.value)
            case 19 where field.hasName(lowercased: "if-unmodified-since"): Self.join(&ifUnmodifiedSince, field.value)
            default: continue
            }
        }
        // Built in the result from the values found: a request value filled in place, or built into a local first,
        // was copied whole into the result and then destroyed.
        return (
            ConditionalRequest(
                method: method, range: range, ifRange: ifRange, ifMatch: ifMatch, ifNoneMatch: ifNoneMatch,
                ifModifiedSince: ifModifiedSince, ifUnmodifiedSince: ifUnmodifiedSince),
            wantReprDigest
        )
    }
}
