extension FaultKey {
    /// `stall-after=SIZE`: after SIZE body bytes, send nothing for `stall-for`, then the rest.
    static let stallAfter = size(
        "stall-after", kind: .bodyDelivery, help: "pause after SIZE body bytes for stall-for (default 1h)",
        needsBody: true, field: \.stallAfter,
        bodyFault: { plan in plan.stallAfter.map { .stall(after: $0, for: plan.stallFor) } })
}
