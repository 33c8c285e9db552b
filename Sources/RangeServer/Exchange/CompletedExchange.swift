#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What happened to one exchange, handed by its front end to `RequestPipeline.complete(_:)` once the response has ended.
struct CompletedExchange: Sendable {
    var request: IncomingRequest
    var plan: ResponsePlan
    var bodyBytesSent: UInt64
    var outcome: JournalOutcome
    var startedAt: ContinuousClock.Instant
    /// The client closed the connection before the response was complete and before any fault of it fired.
    var abandoned = false
    /// Whether a later request's admission already took back this request's scenario attempt (see
    /// `OpenExchanges.reclaimAttempt`).
    var attemptGivenBack = false
    /// When the response ended, if before the front end finished with it (a drop, whose end of stream went out
    /// before the server watched how the client took it); nil: now.
    var endedAt: timespec?
}
