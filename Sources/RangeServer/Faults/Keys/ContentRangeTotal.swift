import HTTPVocabulary

extension FaultKey {
    /// `content-range-total=unknown`: a 206's Content-Range says the complete length is unknown, `bytes a-b/*`
    /// (RFC 9110 §14.4 allows it; a client must not take `*` for a length).
    static let contentRangeTotal = token(
        "content-range-total", value: "unknown", kind: .headers,
        help: "a 206's Content-Range is bytes FIRST-LAST/* (complete length unknown)", needsBody: true,
        shapesResponse: true, field: \.contentRangeTotalUnknown
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            headers: { plan, _, _ in
                plan.replaceSingleRangeContentRange { first, last in "bytes \(first)-\(last)/*" }
            }))
    #endif
}
