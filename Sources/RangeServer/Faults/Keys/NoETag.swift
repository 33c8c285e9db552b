extension FaultKey {
    /// `no-etag=1`: omit ETag; moves with `weak-etag` when a query is merged over a step.
    static let noETag = flag(
        "no-etag", kind: .headers, help: "omit ETag", merge: .together("etag"), field: \.noETag
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 22, representation: { representation, _ in representation = representation.with(entityTag: nil) }))
    #endif
}
