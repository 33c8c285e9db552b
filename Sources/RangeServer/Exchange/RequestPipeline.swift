import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one path every front end takes an exchange along: ``admit(method:target:connection:takeArrival:)`` as its
/// headers arrive, ``plan(for:)`` once they are all in, and ``complete(_:)`` once the response has ended.
///
/// A front end parses its wire into an `IncomingRequest`, carries out the `ResponsePlan` it gets back (its head, its
/// body through `BodyProgram`, its faults) and reports how that went; every HTTP decision, the scenario counters and
/// the journal are here and behind. The libmicrohttpd daemons call it through closures (`RangeServer.start`); the
/// tests' in-memory front end calls it directly.
final class RequestPipeline: Sendable {
    /// Decides every answer.
    let router: Router
    /// Where finished exchanges go.
    let journal: Journal
    /// Where the access log goes; nil when its level drops `info`, so a logger that discards costs the request no
    /// formatting. Read once: a log handler's level is a value (swift-log's contract), and asking the handler per
    /// request cost about 280 instructions (callgrind).
    private let logger: Logger?

    init(router: Router, journal: Journal, logger: Logger) {
        self.router = router
        self.journal = journal
        self.logger = logger.logLevel <= .info ? logger : nil
    }

    /// Numbers a request to `/scenario/...` as its headers arrive (see `Router.admit`).
    func admit(
        method: String, target: String, connection: any ExchangeConnection, takeArrival: () -> Int
    ) -> (arrival: Int, attempt: Int?, exchange: OpenExchange?) {
        router.admit(method: method, target: target, connection: connection, takeArrival: takeArrival)
    }

    /// The plan for a request whose headers have all arrived.
    func plan(for request: IncomingRequest) -> ResponsePlan {
        router.plan(for: request)
    }

    /// Ends an exchange: gives back its connection-cap slot, logs and journals it, and gives back the attempt of a
    /// response its client left of its own accord.
    func complete(_ exchange: CompletedExchange) {
        if let slot = exchange.plan.capSlot { router.connectionCaps.release(slot) }
        record(exchange)
        router.giveBackProbe(exchange)
    }

    private func record(_ exchange: CompletedExchange) {
        if let logger { logAccess(exchange, to: logger) }
        // Reading the journal must not fill the journal, nor must an embedder's API. The request is read in place: a
        // local copy of it cost about 360 instructions per request in copies and destroys (callgrind).
        guard exchange.plan.journaled, !isControl(exchange.request) else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        journal.append(exchange, endedAt: exchange.endedAt ?? now)
    }
}

/// Logs one exchange at `info`: the message is the access-log line the `rangeserver` command prints, and the
/// metadata carries its fields for handlers that format their own.
private func logAccess(_ exchange: CompletedExchange, to logger: Logger) {
    let request = exchange.request
    let elapsed = (ContinuousClock.now - exchange.startedAt).components
    let milliseconds = elapsed.attoseconds / 1_000_000_000_000_000 + elapsed.seconds * 1000
    var line = "\(request.peerAddress) \"\(request.method) \(request.target) \(request.httpVersion)\" "
    line += "\(exchange.plan.status) \(exchange.bodyBytesSent) \(exchange.outcome.rawValue) \(milliseconds)ms"
    var metadata: Logger.Metadata = [
        "peer": "\(request.peerAddress)",
        "method": "\(request.method)",
        "target": "\(request.target)",
        "version": "\(request.httpVersion)",
        "status": "\(exchange.plan.status)",
        "bytes": "\(exchange.bodyBytesSent)",
        "outcome": "\(exchange.outcome.rawValue)",
        "milliseconds": "\(milliseconds)",
    ]
    if !exchange.plan.faults.isEmpty {
        let faults = exchange.plan.faults.joined(separator: ",")
        line += " faults=" + faults
        metadata["faults"] = "\(faults)"
    }
    logger.info("\(line)", metadata: metadata)
}

/// Whether the request is for `/_control/...`; compares bytes, and looks for the path only in a target that is
/// not already in origin form.
///
/// One look at the target's bytes for the common case: asking for `utf8.first` and then `hasUTF8Prefix` reached the
/// bytes twice, on every request.
private func isControl(_ request: IncomingRequest) -> Bool {
    let prefix: StaticString = "/_control/"
    let originForm = request.target.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        for index in 1..<prefix.utf8CodeUnitCount where bytes[index] != prefix.utf8Start[index] { return false }
        return true
    }
    // Nil, or some nil: bytes not contiguous (never the case on Linux), or a target not in origin form.
    if let answer = originForm ?? nil { return answer }
    if request.target.utf8.first == UInt8(ascii: "/") { return request.target.hasUTF8Prefix(prefix) }
    return request.rawPath.hasUTF8Prefix(prefix)
}
