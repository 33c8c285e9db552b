extension FaultKey {
    /// `drop-after=SIZE`: the full headers, SIZE body bytes, then a clean close.
    static let dropAfter = size(
        "drop-after", kind: .connection, help: "close the connection after SIZE body bytes",
        merge: .together("connection-end"), needsBody: true, field: \.dropAfter,
        bodyFault: { plan in plan.dropAfter.map { .end(after: $0, .drop) } })
}
