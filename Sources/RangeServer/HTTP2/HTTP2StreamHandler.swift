import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Answers one HTTP/2 stream through the `RequestPipeline`: builds the `IncomingRequest` from the HEADERS, carries
/// out the plan's head, its `BodyProgram` and its faults on the stream (or on the connection, for the faults that
/// end it), and journals how it went.
///
/// A stream is not a channel of its own: `HTTP2ConnectionHandler` keeps a table of these, hands each its frames and
/// its end, and the stream writes its frames through the connection handler's context (see there for why). The body
/// and the faults that end a stream or its connection are in `HTTP2StreamHandler+Body.swift`.
///
/// Body bytes go out as the client's flow-control window allows: NIOHTTP2 holds DATA past the window, and the
/// program is asked for more only while the connection is writable and less than ``inFlightLimit`` of the stream's
/// DATA waits for the socket (held for the window or queued). `bodyBytesSent` counts the DATA bytes whose write
/// reached the socket (their write promises), never what is only queued.
final class HTTP2StreamHandler {

    /// What the listener hands every stream.
    struct Shared: Sendable {
        let pipeline: RequestPipeline
        let counters: DaemonCounters
        let openExchanges: OpenExchanges
        /// The most request-body bytes kept for a target (custom routes only); nil keeps none.
        let bodyLimit: (@Sendable (String) -> Int)?
        /// Whether the listener is stopping: a stream it cuts is journaled as stalled when it was stalling.
        let isStopping: @Sendable () -> Bool
    }

    private let shared: Shared
    let connection: HTTP2ConnectionState
    private let carrier = HTTP2StreamConnection()
    /// The stream's identifier in frames.
    private let frameStreamID: HTTP2StreamID
    /// The stream's identifier as the journal and the connection's GOAWAY bookkeeping number it.
    var streamID: HTTP2StreamNumber { Int(Int32(frameStreamID)) }
    private let startedAt = ContinuousClock.now

    // The request as it arrives.
    private var method = "GET"
    private var target = "/"
    private var fields: [HeaderField] = []
    private var body: [UInt8] = []
    private var bodyTooLarge = false
    private var keepLimit: Int?
    private var arrival = 0
    private var arrivalTime: Int64 = 0
    private var reservedAttempt: Int?
    private var openExchange: OpenExchange?
    private var started = false

    // The answer as it goes out.
    var request: IncomingRequest?
    var plan: ResponsePlan?
    var program: BodyProgram?
    var position: UInt64 = 0
    var sent: UInt64 = 0
    var faultFired = false
    var headSent = false
    /// Set while the program must not be asked: a wait is scheduled, or the body has been handed over or ended.
    var pumpHeld = false
    /// How the answer ends, once its last frame or its fault is on its way: the stream may close before the write
    /// that ends it reports back, and must then be journaled this way, not as left by the client.
    var ending: JournalOutcome?
    var finished = false
    /// Whether the request arrived on a connection a fault was closing, so nothing of its answer went out.
    private var neverSent = false
    /// The connection handler's context while the stream is open; nil once it has closed, which every step that may
    /// run after the end (a write's completion, a scheduled wait) checks.
    var context: ChannelHandlerContext?
    /// The last DATA write's result: writes complete in order, so once it has, every body byte so far is in the
    /// socket. An ending waits for it, since NIOHTTP2 drops DATA still held for the window when the stream is reset
    /// or the connection closes, and the client must hold the bytes before the fault's point.
    var lastWrite: EventLoopFuture<Void>?
    /// Whether ``pump()`` is running, and whether a call made meanwhile asked it to go round once more.
    var pumping = false
    var pumpAgain = false

    /// Unfaulted bodies go out in large writes (NIOHTTP2 cuts them into frames the peer's SETTINGS allow); faulted
    /// ones in 64 KiB, so a fault point and `bodyBytesSent` stay as fine as over HTTP/1.1.
    var blockSize: Int { plan?.delivery.isPlain == true ? 256 * 1024 : 64 * 1024 }

    /// A stream the client opened on the connection whose handler context is `context`.
    init(shared: Shared, connection: HTTP2ConnectionState, streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        self.shared = shared
        self.connection = connection
        self.frameStreamID = streamID
        self.context = context
    }

    /// A frame of this stream from the client (HEADERS and DATA are read; the connection handler answers the rest).
    func receive(_ payload: HTTP2Frame.FramePayload) {
        guard let context else { return }
        switch payload {
        case .headers(let headers):
            if !started && request == nil && arrival == 0 { receiveHead(headers.headers) }
            if headers.endStream { requestEnded(context: context) }
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data { keep(buffer) }
            if data.endStream { requestEnded(context: context) }
        default:
            break
        }
    }

    /// The connection became writable again.
    func writabilityChanged() {
        if context?.channel.isWritable == true { pump() }
    }

    /// The client reset the stream (RST_STREAM read); its close follows.
    func resetByPeer() {
        carrier.left(.reset)
    }

    /// The stream closed (both ends done, reset by either side, or the connection gone): journals it if nothing has,
    /// and lets go of the connection.
    func closed() {
        guard context != nil else { return }
        defer { context = nil }
        carrier.left(.closed)
        if !finished {
            let outcome: JournalOutcome
            if let ending {
                outcome = ending
            } else if let ended = connection.endedBy {
                outcome = ended
            } else if program?.stalling == true
                || (shared.isStopping() && plan?.delivery.stalls == true)
            {
                outcome = .stalled
            } else if plan?.delivery.silence != nil {
                outcome = .stalled
            } else {
                outcome = .clientClosed
            }
            finish(outcome)
        }
    }

    /// Writes one of this stream's frames (not flushed).
    func write(
        _ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?
    ) {
        context.write(NIOAny(HTTP2Frame(streamID: frameStreamID, payload: payload)), promise: promise)
    }

    /// Writes one of this stream's frames and flushes it (at the end of the read in progress, if one is).
    func writeAndFlush(
        _ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext
    ) -> EventLoopFuture<Void> {
        let promise = context.eventLoop.makePromise(of: Void.self)
        write(payload, context: context, promise: promise)
        connection.flush(context)
        return promise.futureResult
    }

    // MARK: - The request

    /// Reads the request's head (see `HTTP2RequestHead`), takes its arrival number and opens it.
    private func receiveHead(_ headers: HPACKHeaders) {
        let head = HTTP2RequestHead(headers.lazy.map { (name: $0.name, value: $0.value) })
        method = head.method
        target = head.target
        fields = head.fields
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        arrivalTime = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
        let counters = shared.counters
        let takeArrival = { counters.arrivals.wrappingAdd(1, ordering: .relaxed).newValue }
        var exchange: OpenExchange?
        if target.hasUTF8Prefix("/scenario/") {
            (arrival, reservedAttempt, exchange) = shared.pipeline.admit(
                method: method, target: target, connection: carrier, takeArrival: takeArrival)
        } else {
            arrival = takeArrival()
        }
        if !target.hasUTF8Prefix("/_control/") {
            let open =
                exchange ?? OpenExchange(run: nil, scenario: nil, route: nil, attempt: nil, connection: carrier)
            shared.openExchanges.open(open)
            openExchange = open
        }
    }

    /// Keeps a custom route's request body, up to its limit (every other body is read and dropped).
    private func keep(_ buffer: ByteBuffer) {
        guard let bodyLimit = shared.bodyLimit, !bodyTooLarge else { return }
        let limit = keepLimit ?? bodyLimit(target)
        keepLimit = limit
        guard limit > 0 else { return }
        guard body.count + buffer.readableBytes <= limit else {
            bodyTooLarge = true
            body = []
            return
        }
        body.append(contentsOf: buffer.readableBytesView)
    }

    private func requestEnded(context: ChannelHandlerContext) {
        guard !started, arrival != 0 else { return }
        started = true
        // A fault of another stream is closing the connection (its FIN is out, the server only reads until the client
        // closes too): nothing of an answer could reach the client, which must ask again on a new connection.
        let closing = connection.endedBy
        let request = IncomingRequest(
            method: method, target: target, httpVersion: "HTTP/2", headers: fields,
            peerAddress: connection.peerAddress, peerPort: connection.peerPort, connectionID: connection.id,
            arrival: arrival, arrivalTime: arrivalTime, reservedAttempt: reservedAttempt, isTLS: connection.isTLS,
            connection: carrier, body: body, bodyTooLarge: bodyTooLarge, stream: streamID, alpn: connection.alpn,
            alpnOffered: connection.alpnOffered, readBy: connection.socketReadAt)
        body = []
        self.request = request
        if let closing {
            // Journaled with the answer it would have had, ended as the connection was, and its scenario attempt
            // given back: the client never saw it, and its next request must meet the step this one would have.
            self.plan = shared.pipeline.plan(for: request)
            neverSent = true
            ending = closing
            finish(closing)
            return
        }
        let plan = shared.pipeline.plan(for: request)
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        if let deferred = plan.deferred {
            let journaled = plan.journaled
            Task {
                var answer = await deferred()
                answer.journaled = journaled
                let ready = answer
                loop.execute { bound.value.answer(ready) }
            }
            return
        }
        if plan.pendingDigest != nil {
            // Hashing a large representation runs off the event loop, which the connection's other streams share.
            let unchecked = UncheckedBox(plan)
            NIOThreadPool.singleton.submit { _ in
                var plan = unchecked.value
                plan.completeDigest()
                let ready = UncheckedBox(plan)
                loop.execute { bound.value.answer(ready.value) }
            }
            return
        }
        answer(plan)
    }

    // MARK: - The answer

    private func answer(_ plan: ResponsePlan) {
        guard !finished, let context else { return }
        self.plan = plan
        self.program = BodyProgram(plan: plan)
        // A response shaped by a fault from its first byte is not one a client leaves of its own accord.
        if !plan.faults.isEmpty, FaultPlan.shapesResponse(plan.faults) { faultFired = true }
        let http2 = plan.delivery.http2
        if let streams = http2.maxConcurrentStreams {
            let settings: HTTP2Settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: Int(streams))]
            context.write(
                NIOAny(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))), promise: nil)
        }
        switch http2.refusal {
        case .resetStream(let code):
            faultFired = true
            resetStream(code, context: context)
            return
        case .goAway:
            faultFired = true
            // The last stream processed is the highest one answered before this one, so this one was not.
            goAway(lastStream: connection.highestAnswered, closing: .refused, context: context)
            return
        case nil:
            break
        }
        let delivery = plan.delivery
        if let silence = delivery.silence {
            // `head=stall`: no HEADERS for the duration, then the connection closes without an answer, as over
            // HTTP/1.1; a client that gives up first ends the stream, journaled as stalled.
            faultFired = true
            context.flush()
            schedule(after: silence) { handler in
                handler.connection.endedBy = .stalled
                handler.finish(.stalled)
                _ = handler.connection.closer?.closeGently()
            }
            return
        }
        if let delay = delivery.delay, delay > .zero {
            context.flush()
            schedule(after: delay) { handler in
                handler.faultFired = true
                handler.sendHead()
            }
            return
        }
        sendHead()
    }

    /// The HEADERS: `:status`, Date, the planned fields (names lower-cased, as HTTP/2 requires, RFC 9113 §8.2.1),
    /// and the length the plan declares (a `length-delta` lie included).
    private func sendHead() {
        guard !finished, let context, let plan else { return }
        if let last = connection.goAwayLast, streamID > last {
            // A GOAWAY this server sent said this stream would not be processed: nothing of it goes out.
            ending = .refused
            pumpHeld = true
            return
        }
        connection.highestAnswered = max(connection.highestAnswered, streamID)
        var headers = HPACKHeaders()
        headers.reserveCapacity(plan.headers.count + 3)
        headers.add(name: ":status", value: String(plan.status))
        if !plan.headers.contains(where: { $0.hasName(lowercased: "date") }) {
            headers.add(name: "date", value: String(cString: ResponseDate.current()))
        }
        for field in plan.headers {
            let name = field.name.lowercased()
            headers.add(name: name, value: field.value, indexing: Self.indexing(of: name))
        }
        let length = plan.body.length
        if let declared = plan.declaredContentLength { headers.add(name: "content-length", value: String(declared)) }
        headSent = true
        let bodyless = request?.method == "HEAD" || length == 0
        let frame = HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: bodyless))
        if bodyless {
            ending = .complete
            writeAndFlush(frame, context: context).assumeIsolated().whenComplete { [self] in
                complete($0)
            }
            return
        }
        write(frame, context: context, promise: nil)
        pump()
    }

    /// How HPACK may index a response field: a representation's validators are sent as literals without indexing.
    ///
    /// They change with every file, so in the encoder's dynamic table they would only push out the fields that
    /// repeat (`content-type`, `accept-ranges`, a range's `content-length`) and lengthen the table NIOHPACK scans for
    /// every field it indexes; their names are in the static table, so a literal costs no scan at all.
    static func indexing(of name: String) -> HPACKIndexing {
        switch name {
        case "etag", "last-modified": .nonIndexable
        default: .indexable
        }
    }

    // MARK: - Bookkeeping

    /// Runs `body` on the event loop after `delay`, unless the stream has finished by then (``finish(_:)`` cancels
    /// it: a closed stream's hour-long `head=stall` must not keep its handler and plan for the hour).
    func schedule(after delay: Duration, _ body: @escaping (HTTP2StreamHandler) -> Void) {
        guard let context else { return }
        let components = delay.components
        let nanoseconds = components.seconds &* 1_000_000_000 &+ components.attoseconds / 1_000_000_000
        scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(max(0, nanoseconds))) {
            [self] in
            scheduled = nil
            guard !finished else { return }
            body(self)
        }
    }

    /// The wait ``schedule(after:_:)`` set, if one is pending: at most one at a time (a delay, a silence, a pacing or
    /// stall wait, each only while the program is not asked).
    private var scheduled: Scheduled<Void>?

    /// Journals the exchange, once.
    func finish(_ outcome: JournalOutcome) {
        guard !finished else { return }
        finished = true
        scheduled?.cancel()
        scheduled = nil
        defer {
            if let openExchange { shared.openExchanges.close(openExchange) }
            openExchange = nil
        }
        // Moved out, not copied: nothing reads them once the stream has finished, and a copy of the plan (about 50
        // fields) and the request retained and released each of their references once more per request.
        guard let request = request.take(), let plan = plan.take() else { return }
        if program?.faultFired == true { faultFired = true }
        // Every byte of a complete answer reached the socket, whether or not its last write reported back first.
        if outcome == .complete && request.method != "HEAD" { sent = plan.body.length }
        if outcome == .complete && connection.closesAfterStream == streamID {
            // The stream a graceful GOAWAY named has ended: the connection closes now.
            _ = connection.closer?.closeGently()
        }
        shared.pipeline.complete(
            CompletedExchange(
                request: consume request, plan: consume plan, bodyBytesSent: sent, outcome: outcome,
                startedAt: startedAt,
                abandoned: neverSent || (outcome == .clientClosed && !faultFired),
                attemptGivenBack: openExchange?.attemptGivenBack.load(ordering: .relaxed) ?? false))
    }
}
