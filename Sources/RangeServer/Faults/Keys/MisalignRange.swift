extension FaultKey {
    /// `misalign-range=SIZE`: start a 206 SIZE bytes early, with a truthful Content-Range.
    static let misalignRange = size(
        "misalign-range", kind: .headers, help: "start a 206 SIZE bytes early, with a truthful Content-Range",
        needsBody: true, shapesResponse: true, field: \.misalignRange)
}
