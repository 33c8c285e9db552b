extension FaultKey {
    /// `chunked-with-length=1`: chunked transfer coding and a Content-Length as well.
    static let chunkedWithLength = flag(
        "chunked-with-length", kind: .bodyFraming, help: "chunked transfer coding and a Content-Length as well",
        needsBody: true, shapesResponse: true, field: \.chunkedWithLength)
}
