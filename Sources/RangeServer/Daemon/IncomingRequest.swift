/// A request as received, before any HTTP decision: the daemon builds it, the router reads it.
struct IncomingRequest: Sendable {
    /// The method token, as sent.
    var method: String
    /// The request target exactly as received (path and query, still percent-encoded).
    var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    var httpVersion: String
    /// Header fields in arrival order, names lower-cased.
    var headers: [(name: String, value: String)]
    /// The peer's numeric address.
    var peerAddress: String
    /// A per-connection number, so tests can tell connections apart.
    var connectionID: Int

    /// The target before `?`, still encoded.
    var rawPath: Substring {
        target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
    }

    /// The target after `?`, still encoded; empty when there is none.
    var rawQuery: Substring {
        target.firstIndex(of: "?").map { target[target.index(after: $0)...] } ?? ""
    }

    /// The field value for `name` (lower-case); repeated fields are joined with ", " as RFC 9110 allows.
    func header(_ name: String) -> String? {
        var result: String?
        for field in headers where field.name == name {
            result = result.map { $0 + ", " + field.value } ?? field.value
        }
        return result
    }

    /// All headers as a dictionary with repeated fields joined, for the journal.
    var headerDictionary: [String: String] {
        var result: [String: String] = [:]
        for field in headers {
            result[field.name] = result[field.name].map { $0 + ", " + field.value } ?? field.value
        }
        return result
    }
}
