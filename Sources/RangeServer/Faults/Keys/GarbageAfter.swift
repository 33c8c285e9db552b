extension FaultKey {
    /// `garbage-after=SIZE`: SIZE correct body bytes, then bytes of no representation to the declared length.
    static let garbageAfter = size(
        "garbage-after", kind: .bodyDelivery, help: "send SIZE correct body bytes, then garbage, then close",
        needsBody: true, field: \.garbageAfter, bodyFault: { plan in plan.garbageAfter.map { .garbage(after: $0) } })
}
