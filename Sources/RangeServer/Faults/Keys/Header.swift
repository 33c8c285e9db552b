extension FaultKey {
    /// `header=NAME:VALUE`: every answer of the URL carries the field `NAME: VALUE` as written, after its own fields;
    /// given several times, the fields go out in the order given. A vendor's field (Google Cloud Storage's
    /// `x-goog-stored-content-length`, a CDN's cache status) without a key of its own.
    static let header = repeatable(
        "header", kind: .headers, valueForm: "`NAME:VALUE`, repeatable", placeholder: "NAME:VALUE",
        example: "x-goog-stored-content-length:1024",
        help: "every answer also carries the field NAME: VALUE as written; repeat the key for more fields",
        expected: FaultPlan.ExtraHeader.expected, shapesResponse: true, field: \.extraHeaders,
        parse: { FaultPlan.ExtraHeader(parsing: $0) }, format: { HeaderText.queryForm($0.name + ":" + $0.value) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 30,
            headers: { plan, _, exchange in
                for field in exchange.faults.extraHeaders { plan.headers.append(HeaderField(field.name, field.value)) }
            },
            headersOnEveryAnswer: true))
    #endif
}

extension FaultPlan {
    /// One field of `header=NAME:VALUE`: a name as written and a value sent byte for byte.
    package struct ExtraHeader: Hashable, Sendable {
        /// The field name, an RFC 9110 token, as written.
        package let name: String
        /// The field value: any bytes but CR, LF and NUL, leading spaces and tabs after the colon dropped (they are
        /// not part of a field value, RFC 9110 §5.5).
        package let value: String

        /// The end of the one-line error for a bad value.
        static let expected =
            "NAME:VALUE, NAME a header field name (letters, digits or !#$%&'*+-.^_`|~) other than Content-Length, "
            + "Transfer-Encoding or Connection (use length-delta, chunked), VALUE 1 to 1024 bytes without CR, LF or NUL"

        /// The names libmicrohttpd writes itself from the body's framing and the connection's fate, and rewrites or drops
        /// when given: what went out would not be what was asked.
        static let framingNames: Set<String> = ["content-length", "transfer-encoding", "connection"]

        /// Splits `NAME:VALUE` at its first colon; nil when the name is not a token or names a framing field, or the
        /// value is empty (libmicrohttpd drops such a field), longer than 1024 bytes or holds CR, LF or NUL (they would
        /// end the field, or the header, where the client reads them).
        init?(parsing text: String) {
            guard let colon = text.firstIndex(of: ":") else { return nil }
            let name = String(text[..<colon])
            guard let lower = HeaderText.name(name), !Self.framingNames.contains(lower) else { return nil }
            let value = String(text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            guard (1...1024).contains(value.utf8.count),
                !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { return nil }
            self.name = name
            self.value = value
        }
    }
}
