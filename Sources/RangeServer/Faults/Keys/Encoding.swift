extension FaultKey {
    /// `encoding=gzip|gzip-ignores-range|gzip-always`: serve the representation gzip-encoded.
    static let encoding = FaultKey(
        "encoding", kind: .headers,
        help:
            "serve gzip when Accept-Encoding allows it; ignores-range: 200 to a ranged request; always: even to identity",
        shapesResponse: true, field: \.encoding)
}
