import HTTPVocabulary

extension FaultKey {
    /// `content-range=RAW`: a single-part 206 carries RAW as its Content-Range, verbatim, malformed values included
    /// (`bytes=0-99/100`, an end past the complete length); the body is the range asked for, and Content-Length is
    /// the body's. A client must check the field it is given, not trust it.
    static let contentRange = FaultKey(
        "content-range", kind: .headers, valueForm: "header value", placeholder: "RAW", example: "bytes=0-99/100",
        help: "a 206's Content-Range is RAW verbatim (malformed too); the body is the range asked for",
        expected: HeaderText.valueExpected, needsBody: true, shapesResponse: true, field: \.contentRangeRaw,
        parse: { HeaderText.value($0) }, format: { HeaderText.queryForm($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 1,
            headers: { plan, _, exchange in
                guard let raw = exchange.faults.contentRangeRaw else { return }
                plan.replaceSingleRangeContentRange { _, _ in raw }
            }))
    #endif
}
