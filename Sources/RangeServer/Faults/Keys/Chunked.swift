extension FaultKey {
    /// `chunked=1`: chunked transfer coding and no Content-Length.
    static let chunked = flag(
        "chunked", kind: .bodyFraming, help: "chunked transfer coding, no Content-Length", needsBody: true,
        field: \.chunked)
}
