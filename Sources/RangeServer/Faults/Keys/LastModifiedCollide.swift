extension FaultKey {
    /// `lm-collide=1`: version N of a generated resource keeps version N-1's Last-Modified (new bytes, new ETag, the
    /// same date), so an If-Range or If-Unmodified-Since carrying the date cannot tell the versions apart.
    static let lastModifiedCollide = flag(
        "lm-collide", kind: .headers,
        help: "version N keeps version N-1's Last-Modified (new bytes and ETag, same date); /bytes only",
        shapesResponse: true, field: \.lastModifiedCollides
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            representation: { representation, _ throws(ResponsePlanFailure) in
                guard case .generated(let generator) = representation.source else {
                    throw .init(
                        .text(
                            400,
                            "bad request: parameter 'lm-collide=1' works on /bytes/ resources only (a file has one "
                                + "version)"))
                }
                representation = .generated(
                    length: representation.length, seed: generator.seed, version: generator.version,
                    lastModifiedVersion: max(1, generator.version - 1))
            }))
    #endif
}
