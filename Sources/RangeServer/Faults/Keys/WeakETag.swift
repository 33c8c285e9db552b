import HTTPVocabulary

extension FaultKey {
    /// `weak-etag=1`: send the ETag as weak, which If-Range never matches.
    static let weakETag = flag(
        "weak-etag", kind: .headers, help: "send the ETag as weak (W/\"...\")", merge: .together("etag"),
        field: \.weakETag
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 21,
            representation: { representation, _ in
                guard let tag = representation.entityTag, !tag.isWeak else { return }
                representation = representation.with(entityTag: EntityTag(opaqueTag: tag.opaqueTag, isWeak: true))
            }))
    #endif
}
