extension FaultKey {
    /// `head=405`, `head=403` or `head=stall`: HEAD refused with 405 and `Allow: GET`, refused with 403, or never
    /// answered (a HEAD that disagrees with GET); GET is served as usual.
    static let head = FaultKey(
        "head", kind: .status,
        help: "HEAD is refused with 405 and Allow: GET, refused with 403, or never answered; GET as usual",
        field: \.head)
}

extension FaultPlan {
    /// How `head` answers a HEAD request.
    public enum HeadFault: String, CaseIterable, Hashable, Sendable {
        /// 405 with `Allow: GET`.
        case refuse405 = "405"
        /// 403, as storage that signs GET URLs only refuses a HEAD on them.
        case refuse403 = "403"
        /// No answer at all: the connection stays silent until the client closes it, the server stops, or
        /// `FaultPlan.defaultStallDuration` passes (then it is closed without an answer).
        case stall
    }
}
