extension FaultKey {
    /// `max-concurrent-streams=N`: over HTTP/2, a SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS=N on the
    /// connection before this stream's HEADERS; from the client's acknowledgement on, streams past N are refused.
    static let maxConcurrentStreams = FaultKey(
        "max-concurrent-streams", kind: .connection, valueForm: "0–2147483647", placeholder: "N", example: "1",
        help: "HTTP/2: announce SETTINGS_MAX_CONCURRENT_STREAMS=N on the connection before this answer",
        expected: "an integer from 0 to 2147483647", field: \.maxConcurrentStreams,
        parse: { text in FaultPlan.decimalInt(text).flatMap { (0...Int(Int32.max)).contains($0) ? $0 : nil } },
        format: { String($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(body: { plan, exchange in
            plan.delivery.http2.maxConcurrentStreams = exchange.faults.maxConcurrentStreams.map { UInt32($0) }
        }))
    #endif
}
