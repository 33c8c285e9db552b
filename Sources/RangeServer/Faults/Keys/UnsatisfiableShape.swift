extension FaultKey {
    /// `416-shape=...`: how an unsatisfiable range is answered instead of a 416 with `Content-Range: bytes */LENGTH`.
    static let unsatisfiableShape = FaultKey(
        "416-shape", kind: .status, help: "a 416 without Content-Range, or with an HTML error page",
        shapesResponse: true, field: \.unsatisfiableShape)
}
