extension FaultKey {
    /// `range-cap=SIZE`: a single-range 206 carries at most SIZE bytes from the requested start, with a Content-Range
    /// that describes them: a short answer, honestly described, as servers that cap a response send.
    static let rangeCap = FaultKey(
        "range-cap", kind: .headers, valueForm: "size above 0", placeholder: "SIZE", example: "1K",
        help: "a 206 carries at most SIZE bytes from the requested start, with a Content-Range saying so",
        expected: "a size above zero, like 64K", needsBody: true, shapesResponse: true, field: \.rangeCap,
        parse: { ByteSize.parse($0).flatMap { $0 > 0 ? $0 : nil } }, format: { ByteSize.format($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 2,
            outcome: { outcome, _, _, exchange in
                guard case .singleRange(let range) = outcome, let cap = exchange.faults.rangeCap, cap > 0,
                    range.upperBound - range.lowerBound >= cap
                else { return }
                outcome = .singleRange(range.lowerBound...(range.lowerBound + cap - 1))
            }))
    #endif
}
