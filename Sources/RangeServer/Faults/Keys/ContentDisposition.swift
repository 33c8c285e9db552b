extension FaultKey {
    /// `content-disposition=VALUE`: every answer of the URL carries `Content-Disposition: VALUE`, e.g. a file name
    /// that changes from one attempt to the next.
    static let contentDisposition = FaultKey(
        "content-disposition", kind: .headers, valueForm: "header value", placeholder: "VALUE",
        example: "attachment; filename=\"report.pdf\"", help: "every answer carries Content-Disposition: VALUE",
        expected: HeaderText.valueExpected, shapesResponse: true, field: \.contentDisposition,
        parse: { HeaderText.value($0) }, format: { HeaderText.queryForm($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 25,
            headers: { plan, _, exchange in
                guard let value = exchange.faults.contentDisposition else { return }
                plan.headers.append(HeaderField("Content-Disposition", value))
            },
            headersOnEveryAnswer: true))
    #endif
}
