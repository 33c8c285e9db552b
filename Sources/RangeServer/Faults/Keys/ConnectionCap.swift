extension FaultKey {
    /// `connection-cap=N`: at most N responses at once per client address and URL; the others get 503.
    static let connectionCap = FaultKey(
        "connection-cap", kind: .connection, valueForm: "1–10000", placeholder: "N", example: "1",
        help: "serve at most N responses at once per client and URL; answer the others 503 with Retry-After",
        expected: "an integer from 1 to 10000", field: \.connectionCap,
        parse: { text in FaultPlan.decimalInt(text).flatMap { (1...10_000).contains($0) ? $0 : nil } },
        format: { String($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            answer: { exchange in
                guard let cap = exchange.faults.connectionCap else { return nil }
                let key = ConnectionCapCounter.key(
                    peerAddress: exchange.request.peerAddress, target: exchange.request.target)
                guard exchange.context.connectionCaps.acquire(key, limit: cap) else {
                    let retryAfter = (exchange.faults.retryAfter ?? .seconds(1)).headerValue(
                        now: exchange.context.wallClock())
                    var plan = ResponsePlan.text(
                        503,
                        "503 Service Unavailable (injected: connection-cap=\(cap), all taken for this client and URL)",
                        headers: [HeaderField("Retry-After", retryAfter)])
                    plan.faults = exchange.names
                    return plan
                }
                exchange.capSlot = key
                return nil
            }))
    #endif
}
