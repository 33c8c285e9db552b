extension FaultKey {
    /// `unsolicited-206=1`: a request without Range (GET or HEAD) gets 206 with `Content-Range: bytes 0-LAST/LENGTH`
    /// and the whole representation, as if it had asked for `bytes=0-`: a partial answer nobody asked for, which a
    /// client must still take for the whole file only because the Content-Range says so.
    static let unsolicited206 = flag(
        "unsolicited-206", kind: .headers,
        help: "a request without Range gets 206 with Content-Range bytes 0-LAST/LENGTH and the whole body",
        needsBody: true, shapesResponse: true, field: \.unsolicited206
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            outcome: { outcome, representation, conditional, _ in
                // As if the request had asked for bytes=0-, so the faults that shape a single-range 206 apply to it
                // too.
                guard case .full = outcome, conditional.range == nil, representation.length > 0 else { return }
                outcome = .singleRange(0...representation.length - 1)
            }))
    #endif
}
