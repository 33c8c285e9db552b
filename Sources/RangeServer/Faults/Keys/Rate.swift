extension FaultKey {
    /// `rate=SIZE`: pace the body at SIZE bytes per second.
    static let rate = FaultKey(
        "rate", kind: .bodyDelivery, valueForm: "size above 0", placeholder: "SIZE", example: "512K",
        help: "throttle the body to SIZE bytes per second", expected: "a size above zero, like 512K",
        needsBody: true, field: \.rate, parse: { ByteSize.parse($0).flatMap { $0 > 0 ? $0 : nil } },
        format: { ByteSize.format($0) },
        bodyFault: { plan in plan.rate.flatMap { $0 > 0 ? .pace(bytesPerSecond: $0) : nil } })
}
