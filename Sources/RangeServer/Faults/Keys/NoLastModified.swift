extension FaultKey {
    /// `no-last-modified=1`: omit Last-Modified.
    static let noLastModified = flag(
        "no-last-modified", kind: .headers, help: "omit Last-Modified", field: \.noLastModified
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 23,
            representation: { representation, _ in
                representation = representation.withoutLastModified()
            }))
    #endif
}
