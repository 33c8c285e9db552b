extension FaultKey {
    /// `delay=DUR`: wait before the status line (kept on every response, not only on one with a body).
    static let delay = FaultKey(
        "delay", kind: .bodyDelivery, valueForm: durationForm, placeholder: "DUR", example: "1s",
        help: "wait this long before the status line", expected: durationExpected, field: \.delay,
        parse: { FaultDuration.parse($0) }, format: { FaultDuration.format($0) })
}
