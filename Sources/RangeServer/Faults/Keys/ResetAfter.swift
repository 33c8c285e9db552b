extension FaultKey {
    /// `reset-after=SIZE`: the full headers, SIZE body bytes, then a TCP RST.
    static let resetAfter = size(
        "reset-after", kind: .connection, help: "abort with a TCP RST after SIZE body bytes",
        merge: .together("connection-end"), needsBody: true, field: \.resetAfter,
        bodyFault: { plan in plan.resetAfter.map { .end(after: $0, .reset) } })
}
