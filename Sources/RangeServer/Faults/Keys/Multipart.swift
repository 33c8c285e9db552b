extension FaultKey {
    /// `multipart=always`: a request for one range is answered with a `multipart/byteranges` 206 of one part, which
    /// RFC 9110 §14.6 allows and some servers send; a client that asked for one range must still read it.
    static let multipart = token(
        "multipart", value: "always", kind: .headers,
        help: "a single range is answered multipart/byteranges with one part", needsBody: true, shapesResponse: true,
        field: \.multipartAlways
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 3,
            outcome: { outcome, _, _, _ in
                if case .singleRange(let range) = outcome { outcome = .multipleRanges([range]) }
            }))
    #endif
}
