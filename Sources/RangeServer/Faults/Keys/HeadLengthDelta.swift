extension FaultKey {
    /// `head-length-delta=±SIZE`: HEAD's Content-Length is this far off GET's (negative: shorter); GET is served as
    /// usual. A client that sizes its file or its segments from HEAD gets them wrong.
    static let headLengthDelta = FaultKey(
        "head-length-delta", kind: .headers, valueForm: "size with an optional sign", placeholder: "±SIZE",
        example: "-1", help: "HEAD's Content-Length is SIZE bytes off GET's (negative: shorter)",
        expected: "a size with an optional sign, like -100, 1K or +16", field: \.headLengthDelta,
        parse: { FaultPlan.signedSize($0) },
        format: { $0 < 0 ? "-" + ByteSize.format($0.magnitude) : ByteSize.format($0.magnitude) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            body: { plan, exchange in
                // The body of a HEAD is never read, so the length libmicrohttpd declares is all that changes.
                guard exchange.request.method == "HEAD", let delta = exchange.faults.headLengthDelta,
                    case .content(let source, let offset, let length) = plan.body
                else { return }
                let declared = delta < 0 ? length - min(length, delta.magnitude) : length &+ delta.magnitude
                plan.body = .content(source, offset: offset, length: declared)
            }))
    #endif
}
