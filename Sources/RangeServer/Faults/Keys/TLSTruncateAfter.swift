extension FaultKey {
    /// `tls-truncate-after=SIZE`: SIZE body bytes, then a TCP FIN without TLS's close_notify.
    static let tlsTruncateAfter = size(
        "tls-truncate-after", kind: .connection,
        help: "end the TCP stream without TLS close_notify after SIZE body bytes (plain HTTP: a close)",
        merge: .together("connection-end"), needsBody: true, field: \.tlsTruncateAfter,
        bodyFault: { plan in plan.tlsTruncateAfter.map { .end(after: $0, .truncate) } })
}
