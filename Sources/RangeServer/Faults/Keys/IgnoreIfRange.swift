extension FaultKey {
    /// `ignore-if-range=1`: serve the range even when If-Range does not match.
    static let ignoreIfRange = flag(
        "ignore-if-range", kind: .headers, help: "honour Range even when If-Range does not match",
        shapesResponse: true, field: \.ignoreIfRange
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(decision: { options, _ in options.ignoreIfRange = true }))
    #endif
}
