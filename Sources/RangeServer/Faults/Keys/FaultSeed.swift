extension FaultKey {
    /// `fault-seed=N`: the seed of `probability`'s draws; moves with `probability` when a query is merged over a step.
    static let faultSeed = FaultKey(
        "fault-seed", kind: .chance, valueForm: "integer ≥ 0", placeholder: "N", example: "1",
        help: "the seed of probability's draws (default 0)", expected: "a non-negative integer below 2^64",
        merge: .follows("probability"), field: \.faultSeed,
        parse: { text in
            text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ? UInt64(text) : nil
        },
        format: { String($0) })
}
