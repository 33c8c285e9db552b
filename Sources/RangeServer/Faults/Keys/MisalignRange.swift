extension FaultKey {
    /// `misalign-range=SIZE`: start a 206 SIZE bytes early, with a truthful Content-Range.
    static let misalignRange = size(
        "misalign-range", kind: .headers, help: "start a 206 SIZE bytes early, with a truthful Content-Range",
        needsBody: true, shapesResponse: true, field: \.misalignRange
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 1,
            outcome: { outcome, _, _, exchange in
                guard case .singleRange(let range) = outcome, let misalign = exchange.faults.misalignRange else {
                    return
                }
                outcome = .singleRange((range.lowerBound - min(misalign, range.lowerBound))...range.upperBound)
            }))
    #endif
}
