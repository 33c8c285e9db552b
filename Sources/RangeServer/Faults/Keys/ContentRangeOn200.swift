extension FaultKey {
    /// `content-range-on-200=1`: add `Content-Range: bytes 0-LAST/LENGTH` to a 200 with the whole body.
    static let contentRangeOn200 = flag(
        "content-range-on-200", kind: .headers, help: "add Content-Range: bytes 0-LAST/LENGTH to a 200",
        needsBody: true, shapesResponse: true, field: \.contentRangeOn200)
}
