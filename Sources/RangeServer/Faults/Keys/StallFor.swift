extension FaultKey {
    /// `stall-for=DUR`: how long `stall-after` stalls; it moves with `stall-after` when a query is merged over a step.
    static let stallFor = FaultKey(
        "stall-for", kind: .bodyDelivery, valueForm: durationForm, placeholder: "DUR", example: "1s",
        help: "how long stall-after stalls", expected: durationExpected, merge: .follows("stall-after"),
        needsBody: true, field: \.explicitStallFor, parse: { FaultDuration.parse($0) },
        format: { FaultDuration.format($0) })
}
