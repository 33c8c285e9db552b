extension FaultKey {
    /// `length-delta=±SIZE`: declare a Content-Length this far off the body sent, then close.
    static let lengthDelta = FaultKey(
        "length-delta", kind: .bodyFraming, valueForm: "size with an optional sign", placeholder: "±SIZE",
        example: "-1", help: "declare a Content-Length SIZE bytes off the body sent (negative: shorter), then close",
        expected: "a size with an optional sign, like -100, 1K or +16", needsBody: true, field: \.lengthDelta,
        parse: { FaultPlan.signedSize($0) },
        format: { $0 < 0 ? "-" + ByteSize.format($0.magnitude) : ByteSize.format($0.magnitude) },
        bodyFault: { plan in plan.lengthDelta.map { .lengthDelta($0) } })
}
