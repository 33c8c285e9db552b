extension FaultKey {
    /// `rst-stream-after=SIZE`: over HTTP/2, RST_STREAM with `rst-code` after SIZE body bytes; 0 resets the stream
    /// before its HEADERS. The connection and its other streams go on.
    static let rstStreamAfter = size(
        "rst-stream-after", kind: .connection,
        help: "HTTP/2: reset the stream (RST_STREAM, rst-code) after SIZE body bytes; 0: before its HEADERS",
        merge: .together("connection-end"), needsBody: true, field: \.rstStreamAfter,
        bodyFault: { plan in
            guard let after = plan.rstStreamAfter, after > 0 else { return nil }
            return .end(after: after, .resetStream(plan.rstCode ?? .internalError))
        }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(body: { plan, exchange in
            // At 0 nothing of the answer goes out: the stream is refused before its HEADERS.
            guard exchange.faults.rstStreamAfter == 0, plan.status == 200 || plan.status == 206 else { return }
            plan.delivery.http2.refusal = .resetStream(exchange.faults.rstCode ?? .internalError)
        }))
    #endif
}
