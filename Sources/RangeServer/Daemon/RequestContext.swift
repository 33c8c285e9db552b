/// Per-request state, from the first line of the request to libmicrohttpd's completion notice.
final class RequestContext: @unchecked Sendable {
    enum Phase { case receivingHeaders, completingPlan, delaying, queued }

    let target: String
    let startedAt = ContinuousClock.now
    var phase = Phase.receivingHeaders
    /// Set when the headers are announced (the first handler call), so the request value is built once,
    /// complete, when they have all arrived.
    var arrival: Int?
    /// When the headers were announced, in nanoseconds since 1970 (wall clock), for the journal's `arrivalTime`.
    var arrivalTime: Int64 = 0
    /// The scenario attempt counted when the headers were announced, so attempts follow arrival order (see
    /// `Router.admit(target:method:takeArrival:)`).
    var reservedAttempt: Int?
    /// How many body bytes to keep (a custom route's limit), read once from the target; nil until asked.
    var bodyLimit: Int?
    /// The body kept so far, for a custom route.
    var body: [UInt8] = []
    /// Whether the body outgrew `bodyLimit` (the rest is discarded and the request answered 413).
    var bodyTooLarge = false
    var request: IncomingRequest?
    var plan: ResponsePlan?
    var bodyBytesSent: UInt64 = 0
    var outcome: JournalOutcome?

    init(target: String) { self.target = target }
}
