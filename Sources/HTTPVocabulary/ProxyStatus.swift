import RawStructuredFieldValues

/// A `Proxy-Status` field (RFC 9209): a structured-field List (RFC 9651) with one member per intermediary that handled
/// the response, the one nearest the origin first, such as `squid; error=http_request_denied; details="..."`.
///
/// Parsed by swift-http-structured-headers: a field that is not a valid List is ignored as a whole (RFC 9651 §4.2).
/// Only what a client needs to tell a proxy's own error response from a relayed one is kept.
public struct ProxyStatus: Hashable, Sendable {
    /// One intermediary's entry.
    public struct Entry: Hashable, Sendable {
        /// The intermediary's name (a token or a string in the field).
        public var proxy: String
        /// Its `error` parameter (RFC 9209 §2.3, `destination_unavailable`, `http_request_denied`, ...), when the
        /// intermediary says it met an error: then the response is its own, not the next hop's.
        public var error: String?

        /// Creates an entry.
        public init(proxy: String, error: String? = nil) {
            self.proxy = proxy
            self.error = error
        }
    }

    /// The entries in field order: the intermediary nearest the origin first, the client's own proxy last.
    public var entries: [Entry]

    /// Parses a field value.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: `nil` when the value is not a structured-field List; members that are not a token or a string are
    ///   skipped, and so is an `error` parameter that is not a token.
    public init?(parsing value: String) {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let list = try? parser.parseListFieldValue() else { return nil }
        var entries: [Entry] = []
        for member in list {
            guard case .item(let item) = member else { continue }
            let name: String
            switch item.rfc9651BareItem {
            case .token(let token): name = token
            case .string(let string): name = string
            default: continue
            }
            var error: String?
            for (key, parameter) in item.rfc9651Parameters where key == "error" {
                if case .token(let token) = parameter { error = token }
            }
            entries.append(Entry(proxy: name, error: error))
        }
        self.entries = entries
    }

    /// The error of the intermediary that generated the response: the entry nearest the origin that names one
    /// (the ones after it relayed its response).
    public var error: String? { entries.first { $0.error != nil }?.error }
}
