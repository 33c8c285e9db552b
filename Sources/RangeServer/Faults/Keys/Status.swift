extension FaultKey {
    /// `status=CODE`: answer this status with a short text body instead of the resource.
    static let status = FaultKey(
        "status", kind: .status, valueForm: "200–599", placeholder: "CODE", example: "503",
        help: "answer CODE with a short text body instead of the resource", expected: "a status code from 200 to 599",
        shapesResponse: true, field: \.status,
        parse: { text in FaultPlan.decimalInt(text).flatMap { (200...599).contains($0) ? $0 : nil } },
        format: { String($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 2,
            answer: { exchange in
                guard let status = exchange.faults.status else { return nil }
                var headers: [HeaderField] = []
                if let retryAfter = exchange.faults.retryAfter {
                    headers.append(
                        HeaderField("Retry-After", retryAfter.headerValue(now: exchange.context.wallClock())))
                }
                var plan = ResponsePlan.text(status, "\(status) \(reasonPhrase(status)) (injected)", headers: headers)
                plan.faults = exchange.names
                plan.delivery.delay = exchange.faults.delay
                return plan
            }))
    #endif
}
