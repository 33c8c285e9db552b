extension FaultKey {
    /// `lm-collide=1`: version N of a generated resource keeps version N-1's Last-Modified (new bytes, new ETag, the
    /// same date), so an If-Range or If-Unmodified-Since carrying the date cannot tell the versions apart.
    static let lastModifiedCollide = flag(
        "lm-collide", kind: .headers,
        help: "version N keeps version N-1's Last-Modified (new bytes and ETag, same date); /bytes only",
        shapesResponse: true, field: \.lastModifiedCollides)
}
