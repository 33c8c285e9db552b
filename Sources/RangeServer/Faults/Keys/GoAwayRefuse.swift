extension FaultKey {
    /// `goaway-refuse=1`: over HTTP/2, GOAWAY whose last-stream-id is below this stream, before any HEADERS, then a
    /// close: the stream was not processed, and a client may retry it on a new connection (RFC 9113 §6.8).
    static let goAwayRefuse = flag(
        "goaway-refuse", kind: .connection,
        help: "HTTP/2: GOAWAY with a last-stream-id below this stream before its HEADERS, then close (retry it)",
        shapesResponse: true, field: \.goAwayRefuse
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(FaultHooks(body: { plan, exchange in plan.delivery.http2.refusal = .goAway }))
    #endif
}
