#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// The exchange's connection as the router sees it, made when the headers arrive.
    var connection: MicroHTTPConnection?
    /// How many body bytes to keep (a custom route's limit), read once from the target; nil until asked.
    var bodyLimit: Int?
    /// The body kept so far, for a custom route.
    var body: [UInt8] = []
    /// Whether the body outgrew `bodyLimit` (the rest is discarded and the request answered 413).
    var bodyTooLarge = false
    var request: IncomingRequest?
    var plan: ResponsePlan?
    /// Body bytes written to the socket, as far as the body reader knows: the position libmicrohttpd last asked for
    /// (every byte before it has been written). See `bodyBytesHandedOver` for the block after it.
    var bodyBytesSent: UInt64 = 0
    /// The end of the last block the body reader handed to libmicrohttpd. libmicrohttpd writes a block and asks for
    /// the next position on a later pass of its event loop, so a request that ends in between (a stop, a client
    /// that closes) has written some or all of the bytes from `bodyBytesSent` up to here.
    var bodyBytesHandedOver: UInt64 = 0
    /// On plain TCP with a body of known size (no chunk framing), the socket's count of bytes written
    /// (`cmhd_bytes_written`) less the body bytes written, taken when the body reader handed over its first block:
    /// the count at which the body starts, from which the completion works out how much of that last block went.
    var bodySocketBase: Int64?
    var outcome: JournalOutcome?
    /// Whether a fault that fires at a point of the response (a delay the client gave up on, a stall, garbage, a
    /// drop, a reset, a truncation, a bad chunk) had been reached: a response the client then closed was not one it
    /// left of its own accord (see `JournalEntry.abandoned`).
    var faultFired = false {
        didSet { openExchange?.faultFired.store(faultFired, ordering: .releasing) }
    }
    /// Whether the response is inside a `stall-after` stall: a client that closes then leaves a stalled response,
    /// even when libmicrohttpd ends the request before the body reader looks at the socket again.
    var stalling = false
    /// When the response ended, where that was before libmicrohttpd finished with it (see `BodyReader.drop()`).
    var endedAt: timespec?
    /// When a `delay` fault's wait is over, while the response waits on it.
    var delayEnds: ContinuousClock.Instant?
    /// The request as the server's open requests know it, from the arrival of its headers on (see `OpenExchanges`).
    private(set) var openExchange: OpenExchange?
    /// Where it is counted open, until `close()`.
    private var openIn: OpenExchanges?

    init(target: String) { self.target = target }

    deinit { close() }

    /// Counts the request as open in `exchanges`.
    func open(_ exchange: OpenExchange, in exchanges: OpenExchanges) {
        exchanges.open(exchange)
        openExchange = exchange
        openIn = exchanges
    }

    /// Counts the request as closed, once; called after its journal entry is stored (and, for a request that ended
    /// without one, when the context goes).
    func close() {
        guard let exchanges = openIn, let exchange = openExchange else { return }
        openIn = nil
        exchanges.close(exchange)
    }
}
