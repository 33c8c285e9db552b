extension FaultKey {
    /// `head=405`, `head=403` or `head=stall`: HEAD refused with 405 and `Allow: GET`, refused with 403, or never
    /// answered (a HEAD that disagrees with GET); GET is served as usual.
    static let head = FaultKey(
        "head", kind: .status,
        help: "HEAD is refused with 405 and Allow: GET, refused with 403, or never answered; GET as usual",
        field: \.head
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 3,
            answer: { exchange in
                guard let head = exchange.faults.head, head != .stall, exchange.request.method == "HEAD" else {
                    return nil
                }
                var plan =
                    head == .refuse405
                    ? ResponsePlan.text(
                        405, "method HEAD not allowed (injected)", headers: [HeaderField("Allow", "GET")])
                    : ResponsePlan.text(403, "HEAD forbidden (injected)")
                plan.faults = exchange.names
                plan.delivery.delay = exchange.faults.delay
                return plan
            },
            body: { plan, exchange in
                // Withholds the answer HEAD would otherwise get.
                if exchange.faults.head == .stall, exchange.request.method == "HEAD" {
                    plan.delivery.silence = FaultPlan.defaultStallDuration
                }
            }))
    #endif
}

extension FaultPlan {
    /// How `head` answers a HEAD request.
    package enum HeadFault: String, CaseIterable, Hashable, Sendable {
        /// 405 with `Allow: GET`.
        case refuse405 = "405"
        /// 403, as storage that signs GET URLs only refuses a HEAD on them.
        case refuse403 = "403"
        /// No answer at all: the connection stays silent until the client closes it, the server stops, or
        /// `FaultPlan.defaultStallDuration` passes (then it is closed without an answer).
        case stall
    }
}
