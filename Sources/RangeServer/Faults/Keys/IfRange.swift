extension FaultKey {
    /// `if-range=date-only`: an If-Range carrying an entity tag never matches; a date is evaluated as usual.
    static let ifRange = token(
        "if-range", value: "date-only", kind: .headers,
        help: "an If-Range with an entity tag never matches (200); a date is evaluated as usual",
        field: \.ifRangeDateOnly
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(decision: { options, _ in options.ifRangeDateOnly = true }))
    #endif
}
