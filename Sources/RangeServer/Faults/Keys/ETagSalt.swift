import HTTPVocabulary

extension FaultKey {
    /// `etag-salt=TOKEN`: append `-TOKEN` to the ETag, as another edge of a CDN would.
    static let etagSalt = FaultKey(
        "etag-salt", kind: .headers, valueForm: "token", placeholder: "TOKEN", example: "edge2",
        help: "append -TOKEN to the ETag (the bytes and Last-Modified stay)",
        expected: "a token of 1 to 32 letters, digits, '.', '_' or '-', like edge2", field: \.etagSalt,
        parse: { FaultPlan.isSaltToken($0) ? $0 : nil }, format: { $0 }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 20,
            representation: { representation, exchange in
                guard let salt = exchange.faults.etagSalt, let tag = representation.entityTag else { return }
                representation = representation.with(
                    entityTag: EntityTag(opaqueTag: tag.opaqueTag + "-" + salt, isWeak: tag.isWeak))
            }))
    #endif
}
