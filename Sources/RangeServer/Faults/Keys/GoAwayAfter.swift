extension FaultKey {
    /// `goaway-after=SIZE`: over HTTP/2, GOAWAY naming this stream as the last after SIZE body bytes; `goaway` says
    /// whether the stream then finishes (`graceful`) or the connection closes at once (`close`, the default).
    static let goAwayAfter = size(
        "goaway-after", kind: .connection,
        help: "HTTP/2: GOAWAY naming this stream after SIZE body bytes; graceful finishes it, close (default) closes",
        merge: .together("connection-end"), needsBody: true, field: \.goAwayAfter,
        bodyFault: { plan in
            guard let after = plan.goAwayAfter else { return nil }
            return plan.goAway == .graceful ? .goAway(after: after) : .end(after: after, .goAway)
        })
}
