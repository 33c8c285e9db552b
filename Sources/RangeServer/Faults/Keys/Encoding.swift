extension FaultKey {
    /// `encoding=gzip|gzip-ignores-range|gzip-always`: serve the representation gzip-encoded.
    static let encoding = FaultKey(
        "encoding", kind: .headers,
        help:
            "serve gzip when Accept-Encoding allows it; ignores-range: 200 to a ranged request; always: even to identity",
        shapesResponse: true, field: \.encoding
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 10,
            representation: { representation, exchange throws(ResponsePlanFailure) in
                guard let encoding = exchange.faults.encoding,
                    encoding == .gzipAlways || AcceptEncoding.allowsGzip(exchange.request.header("accept-encoding"))
                else { return }
                guard let encoded = exchange.context.gzipped.encoded(representation) else {
                    let limit = ByteSize.format(GzipEncoding.maximumIdentityLength)
                    throw .init(
                        .text(
                            400, "bad request: encoding=\(encoding.rawValue) needs a representation of at most \(limit)"
                        ))
                }
                representation = encoded
                exchange.encoded = true
                exchange.ignoresRange = encoding == .gzipIgnoresRange
            },
            decision: { options, exchange in if exchange.ignoresRange { options.ignoreRange = true } },
            headers: { plan, _, exchange in
                // Every answer from a URL that negotiates says so, identity ones too, so caches keep them apart.
                guard plan.status == 200 || plan.status == 206 || plan.status == 304 else { return }
                plan.headers.append(HeaderField("Vary", "Accept-Encoding"))
                if exchange.encoded { plan.headers.append(HeaderField("Content-Encoding", "gzip")) }
            },
            headersOnEveryAnswer: true))
    #endif
}
