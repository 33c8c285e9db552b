extension FaultKey {
    /// `no-content-length=1`: over HTTP/2, HEADERS without content-length; the body ends where END_STREAM (or a
    /// reset) ends it, as a body of unknown length (RFC 9113 §8.1.1).
    static let noContentLength = flag(
        "no-content-length", kind: .bodyFraming,
        help: "HTTP/2: send no content-length; the stream's end delimits the body", needsBody: true,
        field: \.noContentLength
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(body: { plan, exchange in
            if plan.status == 200 || plan.status == 206 { plan.delivery.http2.omitsContentLength = true }
        }))
    #endif
}
