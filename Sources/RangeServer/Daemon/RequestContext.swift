/// Per-request state, from the first line of the request to libmicrohttpd's completion notice.
final class RequestContext: @unchecked Sendable {
    enum Phase { case receivingHeaders, completingDigest, delaying, queued }

    let target: String
    let startedAt = ContinuousClock.now
    var phase = Phase.receivingHeaders
    /// Set when the headers are announced (the first handler call), so the request value is built once,
    /// complete, when they have all arrived.
    var arrival: Int?
    var request: IncomingRequest?
    var plan: ResponsePlan?
    var bodyBytesSent: UInt64 = 0
    var outcome: JournalOutcome?

    init(target: String) { self.target = target }
}
