extension FaultKey {
    /// `retry-after=N`: the `Retry-After` seconds of `status`'s answer or of `connection-cap`'s 503.
    static let retryAfter = FaultKey(
        "retry-after", kind: .status, valueForm: "seconds", placeholder: "N", example: "1",
        help: "with status or connection-cap, add Retry-After: N", expected: "a whole number of seconds",
        merge: .follows("status"), field: \.retryAfter, parse: { FaultPlan.decimalInt($0) }, format: { String($0) })
}
