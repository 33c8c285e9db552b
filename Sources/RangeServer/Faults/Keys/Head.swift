extension FaultKey {
    /// `head=405`: refuse HEAD with 405 and `Allow: GET`; GET is served as usual.
    static let head = token(
        "head", value: "405", kind: .status, help: "refuse HEAD with 405 and Allow: GET", field: \.refuseHead)
}
