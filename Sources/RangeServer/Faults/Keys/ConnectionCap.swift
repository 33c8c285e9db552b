extension FaultKey {
    /// `connection-cap=N`: at most N responses at once per client address and URL; the others get 503.
    static let connectionCap = FaultKey(
        "connection-cap", kind: .connection, valueForm: "1–10000", placeholder: "N", example: "1",
        help: "serve at most N responses at once per client and URL; answer the others 503 with Retry-After",
        expected: "an integer from 1 to 10000", field: \.connectionCap,
        parse: { text in FaultPlan.decimalInt(text).flatMap { (1...10_000).contains($0) ? $0 : nil } },
        format: { String($0) })
}
