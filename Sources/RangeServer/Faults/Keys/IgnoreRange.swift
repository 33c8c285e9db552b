extension FaultKey {
    /// `ignore-range=1`: answer 200 with the whole body whatever Range asks.
    static let ignoreRange = flag(
        "ignore-range", kind: .headers, help: "answer 200 even when Range is present", shapesResponse: true,
        field: \.ignoreRange
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(decision: { options, _ in options.ignoreRange = true }))
    #endif
}
