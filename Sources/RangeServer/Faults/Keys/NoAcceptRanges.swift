extension FaultKey {
    /// `no-accept-ranges=1`: omit `Accept-Ranges: bytes` (ranges are still honoured).
    static let noAcceptRanges = flag(
        "no-accept-ranges", kind: .headers, help: "omit Accept-Ranges: bytes (ranges are still honoured)",
        field: \.noAcceptRanges
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            headers: { plan, _, _ in plan.headers.removeAll { $0.name == "Accept-Ranges" } }))
    #endif
}
