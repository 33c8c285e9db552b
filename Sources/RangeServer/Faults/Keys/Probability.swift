extension FaultKey {
    /// `probability=P`: apply the other faults to a request only with this probability.
    static let probability = FaultKey(
        "probability", kind: .chance, valueForm: "0 < P ≤ 1", placeholder: "P", example: "0.5",
        help: "apply the other faults only with probability P (seeded draws)",
        expected: "a probability above 0 and at most 1, like 0.5", field: \.probability,
        parse: { FaultChance.parseMillionths($0) }, format: { FaultChance.formatMillionths($0) })
}
