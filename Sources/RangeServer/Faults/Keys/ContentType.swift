extension FaultKey {
    /// `content-type=VALUE`: every answer of the URL carries `Content-Type: VALUE`, replacing its own (a multipart
    /// 206's too, whose boundary is then lost).
    static let contentType = FaultKey(
        "content-type", kind: .headers, valueForm: "header value", placeholder: "VALUE", example: "text/html",
        help: "every answer carries Content-Type: VALUE instead of its own", expected: HeaderText.valueExpected,
        shapesResponse: true, field: \.contentType, parse: { HeaderText.value($0) },
        format: { HeaderText.queryForm($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 20,
            headers: { plan, _, exchange in
                guard let contentType = exchange.faults.contentType else { return }
                // In place: a pending Repr-Digest is inserted later at an index into this list.
                if let index = plan.headers.firstIndex(where: { $0.name.lowercased() == "content-type" }) {
                    plan.headers[index].value = contentType
                } else {
                    plan.headers.append(HeaderField("Content-Type", contentType))
                }
            },
            headersOnEveryAnswer: true))
    #endif
}
