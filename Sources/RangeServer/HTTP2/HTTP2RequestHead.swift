/// The request a decoded HEADERS field list describes (RFC 9113 §8.3.1), as the router reads any request: a method,
/// a target and the fields in arrival order, with `:authority` as `host`.
///
/// Pure, so the fuzz target `h2-request` reaches it without SwiftNIO. Lenient as libmicrohttpd is with HTTP/1.1:
/// a list without `:method` is a GET, one without `:path` asks for `/`; repeated pseudo-header fields keep the first.
struct HTTP2RequestHead: Equatable, Sendable {
    /// The method token, as sent.
    var method = "GET"
    /// The request target (`:path`), still percent-encoded.
    var target = "/"
    /// The regular fields in arrival order, `host` first when it came as `:authority`; no pseudo-header field.
    var fields: [HeaderField] = []

    /// Reads a field list in arrival order.
    init(_ list: some Sequence<(name: String, value: String)>) {
        var method: String?
        var target: String?
        var authority: String?
        for (name, value) in list {
            switch name {
            case ":method": method = method ?? value
            case ":path": target = target ?? value
            case ":authority": authority = authority ?? value
            default:
                // `:scheme`, and any other pseudo-header field, names no field of the request.
                if name.utf8.first == UInt8(ascii: ":") { continue }
                fields.append(HeaderField(name, value))
            }
        }
        if let method, !method.isEmpty { self.method = method }
        if let target, !target.isEmpty { self.target = target }
        if let authority, !fields.contains(where: { $0.hasName(lowercased: "host") }) {
            fields.insert(HeaderField("host", authority), at: 0)
        }
    }
}
