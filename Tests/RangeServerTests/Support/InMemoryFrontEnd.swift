import Logging
import Synchronization

@testable import RangeServer

/// A second front end, with no socket: it takes requests through the same `RequestPipeline` as the libmicrohttpd
/// daemons and carries each plan out in memory, writing the bytes an HTTP/1.1 server puts on the wire for it and
/// saying how the wire would end. Waits (pacing, stalls, delays) pass on a virtual clock, so a paced body costs no
/// time; a wait longer than the client's idle timeout ends the capture as timed out, as a client would see it.
///
/// It exists to show that a front end needs nothing from the router beyond the plan (see
/// `FrontEndAgreementTests`): everything it writes comes from the plan, `BodyProgram` and `ResponseBody.fill`.
/// The head follows libmicrohttpd 0.9.75's framing rules (which fields it adds, and where), the ones any HTTP/1.1
/// front end has to choose; chunk sizes are its own, so bodies are compared decoded.
final class InMemoryFrontEnd: Sendable {
    /// How a capture ends, as the client sees it.
    enum Ending: Equatable, Sendable, CustomStringConvertible {
        /// The server closed in order (FIN) after the bytes.
        case closed
        /// The server reset the connection (RST) after the bytes.
        case reset
        /// Nothing more came for the client's idle timeout.
        case timedOut
        /// The capture stopped at its byte limit.
        case capped

        var description: String {
            switch self {
            case .closed: "closed"
            case .reset: "reset"
            case .timedOut: "timed out"
            case .capped: "capped"
            }
        }
    }

    /// The bytes of one exchange's response as they would reach the client, and how the wire ended.
    struct Capture: Sendable {
        var bytes: [UInt8]
        var ending: Ending
    }

    let pipeline: RequestPipeline
    /// How long the simulated client waits for a byte before it gives up.
    let clientTimeout: Duration
    /// The most bytes a capture holds (a 5 GiB body is compared on its first part).
    let limit: Int
    private let arrivals = Atomic<Int>(0)
    private let connections = Atomic<Int>(0)

    init(pipeline: RequestPipeline, clientTimeout: Duration = .seconds(3), limit: Int = 8 << 20) {
        self.pipeline = pipeline
        self.clientTimeout = clientTimeout
        self.limit = limit
    }

    /// What the router asks of this front end's connections: an HTTP/1.1 front end on plain HTTP refuses the keys
    /// libmicrohttpd's does (the HTTP/2 ones), and with no socket nobody ever leaves.
    private static let connection = MicroHTTPConnection(socket: -1, isTLS: false)

    /// Answers one request sent on a fresh connection with `Connection: close`, the way `RawHTTPConnection.request`
    /// sends it: `Host`, then `headers` sorted by name, then `Connection`.
    func exchange(_ method: String = "GET", _ target: String, headers: [String: String] = [:]) async -> Capture {
        var fields = [HeaderField("Host", "127.0.0.1")]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.append(HeaderField(name, value))
        }
        fields.append(HeaderField("Connection", "close"))
        let takeArrival = { self.arrivals.wrappingAdd(1, ordering: .relaxed).newValue }
        var arrival: Int
        var attempt: Int?
        if target.hasPrefix("/scenario/") {
            (arrival, attempt, _) = pipeline.admit(
                method: method, target: target, connection: Self.connection, takeArrival: takeArrival)
        } else {
            arrival = takeArrival()
        }
        let request = IncomingRequest(
            method: method, target: target, httpVersion: "HTTP/1.1", headers: fields, peerAddress: "127.0.0.1",
            peerPort: 0, connectionID: connections.wrappingAdd(1, ordering: .relaxed).newValue, arrival: arrival,
            reservedAttempt: attempt, connection: Self.connection)
        let startedAt = ContinuousClock.now
        var plan = pipeline.plan(for: request)
        if let deferred = plan.deferred { plan = await deferred() }
        if plan.pendingDigest != nil { plan.completeDigest() }
        var run = Run(plan: plan, isHead: method == "HEAD", clientTimeout: clientTimeout, limit: limit)
        run.carryOut()
        // A response shaped by a fault from its first byte is not one a client leaves of its own accord; nor is one
        // whose fault the body had reached (the daemon's rule, `JournalEntry.abandoned`).
        let faultFired = run.faultFired || (!plan.faults.isEmpty && FaultPlan.shapesResponse(plan.faults))
        pipeline.complete(
            CompletedExchange(
                request: request, plan: plan, bodyBytesSent: run.bodyBytesSent, outcome: run.outcome,
                startedAt: startedAt, abandoned: run.outcome == .clientClosed && !faultFired))
        return Capture(bytes: run.bytes, ending: run.ending)
    }

    /// One plan carried out.
    private struct Run {
        let plan: ResponsePlan
        let isHead: Bool
        let clientTimeout: Duration
        let limit: Int
        var bytes: [UInt8] = []
        var ending = Ending.closed
        var outcome = JournalOutcome.complete
        var bodyBytesSent: UInt64 = 0
        /// Whether a fault of the body, or a delay or silence before it, had been reached when the run ended.
        var faultFired = false

        init(plan: ResponsePlan, isHead: Bool, clientTimeout: Duration, limit: Int) {
            self.plan = plan
            self.isHead = isHead
            self.clientTimeout = clientTimeout
            self.limit = limit
        }

        mutating func carryOut() {
            let delivery = plan.delivery
            if let silence = delivery.silence {
                // `head=stall`: no byte at all, then a close.
                ending = silence > clientTimeout ? .timedOut : .closed
                outcome = .stalled
                faultFired = true
                return
            }
            if let delay = delivery.delay, delay > clientTimeout {
                ending = .timedOut
                outcome = .clientClosed
                faultFired = true
                return
            }
            writeHead()
            if isHead || plan.body.length == 0 && !chunked {
                if chunked && !isHead { write("0\r\n\r\n") }
                return
            }
            writeBody()
        }

        /// Whether the body goes out chunked: libmicrohttpd chunks a body whose size it is not told, except in the
        /// close-delimited mode `length-delta` asks for, and never an answer to HEAD.
        private var chunked: Bool {
            plan.delivery.leavesSizeUnknown(forHEAD: isHead) && plan.delivery.lengthDelta == nil
        }

        /// The status line and fields: `Connection: close` (the client asked for it) and Date, the planned fields in
        /// order, and the framing fields.
        private mutating func writeHead() {
            let delivery = plan.delivery
            write("HTTP/1.1 \(plan.status) \(reasonPhrase(plan.status))\r\n")
            // libmicrohttpd writes its own Date first on a response that closes the connection of itself, and after
            // its Connection field on one that closes because the client asked.
            let date = "Date: \(String(cString: ResponseDate.current()))\r\n"
            if delivery.closesConnection { write(date) }
            write("Connection: close\r\n")
            if !delivery.closesConnection { write(date) }
            for field in plan.headers { write("\(field.name): \(field.value)\r\n") }
            if let delta = delivery.lengthDelta {
                write("Content-Length: \(max(0, Int64(clamping: plan.body.length) + delta))\r\n")
            } else if chunked {
                if delivery.chunkedWithLength { write("Content-Length: \(plan.body.length)\r\n") }
                write("Transfer-Encoding: chunked\r\n")
            } else if !Self.carriesNoLength(plan.status) {
                write("Content-Length: \(plan.body.length)\r\n")
            }
            write("\r\n")
        }

        /// Statuses whose answers carry no Content-Length from libmicrohttpd.
        private static func carriesNoLength(_ status: Int) -> Bool {
            (100..<200).contains(status) || status == 204 || status == 304
        }

        private mutating func writeBody() {
            var program = BodyProgram(plan: plan)
            var now = ContinuousClock.now
            var position: UInt64 = 0
            var block = [UInt8](repeating: 0, count: 64 * 1024)
            defer { faultFired = faultFired || program.faultFired }
            while true {
                bodyBytesSent = position
                if bytes.count >= limit {
                    ending = .capped
                    outcome = .clientClosed
                    return
                }
                switch program.next(position: position, capacity: block.count, now: now) {
                case .send(let count):
                    let ok = block.withUnsafeMutableBytes { buffer -> Bool in
                        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                        guard plan.body.fill(target, position: position) else { return false }
                        program.filled(target, position: position)
                        return true
                    }
                    guard ok else {
                        outcome = .dropped
                        return
                    }
                    if chunked { write(String(count, radix: 16) + "\r\n") }
                    bytes += block[0..<count]
                    if chunked { write("\r\n") }
                    position += UInt64(count)
                case .wait(let until), .stall(let until):
                    guard until - now <= clientTimeout else {
                        ending = .timedOut
                        outcome = program.stalling ? .stalled : .clientClosed
                        return
                    }
                    now = until
                case .complete:
                    if chunked { write("0\r\n\r\n") }
                    return
                case .end(let end):
                    switch end {
                    case .drop: outcome = .dropped
                    case .truncate: outcome = .truncated
                    case .reset:
                        outcome = .reset
                        ending = .reset
                    case .malformedChunk:
                        write(BodyProgram.malformedChunkLine)
                        outcome = .dropped
                    case .resetStream, .goAway:
                        // HTTP/2 endings: this front end writes HTTP/1.1, which refuses the keys (as libmicrohttpd's).
                        outcome = .dropped
                    }
                    return
                case .goAway:
                    continue
                }
            }
        }

        private mutating func write(_ text: String) { bytes += Array(text.utf8) }
    }
}
