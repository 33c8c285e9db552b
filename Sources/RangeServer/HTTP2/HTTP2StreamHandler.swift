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
/// its end, and the stream writes its frames through the connection handler's context (see there for why).
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
    private let connection: HTTP2ConnectionState
    private let carrier = HTTP2StreamConnection()
    /// The stream's identifier in frames, and as the journal records it.
    private let frameStreamID: HTTP2StreamID
    private let streamID: HTTP2StreamNumber
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
    private var request: IncomingRequest?
    private var plan: ResponsePlan?
    private var program: BodyProgram?
    private var position: UInt64 = 0
    private var sent: UInt64 = 0
    private var faultFired = false
    private var headSent = false
    /// Set while the program must not be asked: a wait is scheduled, or the body has been handed over or ended.
    private var pumpHeld = false
    /// How the answer ends, once its last frame or its fault is on its way: the stream may close before the write
    /// that ends it reports back, and must then be journaled this way, not as left by the client.
    private var ending: JournalOutcome?
    private var finished = false
    /// Whether the request arrived on a connection a fault was closing, so nothing of its answer went out.
    private var neverSent = false
    /// The connection handler's context while the stream is open; nil once it has closed, which every step that may
    /// run after the end (a write's completion, a scheduled wait) checks.
    private var context: ChannelHandlerContext?
    /// The last DATA write's result: writes complete in order, so once it has, every body byte so far is in the
    /// socket. An ending waits for it, since NIOHTTP2 drops DATA still held for the window when the stream is reset
    /// or the connection closes, and the client must hold the bytes before the fault's point.
    private var lastWrite: EventLoopFuture<Void>?

    /// Unfaulted bodies go out in large writes (NIOHTTP2 cuts them into frames the peer's SETTINGS allow); faulted
    /// ones in 64 KiB, so a fault point and `bodyBytesSent` stay as fine as over HTTP/1.1.
    private var blockSize: Int { plan?.delivery.isPlain == true ? 256 * 1024 : 64 * 1024 }

    /// A stream the client opened on the connection whose handler context is `context`.
    init(shared: Shared, connection: HTTP2ConnectionState, streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        self.shared = shared
        self.connection = connection
        self.frameStreamID = streamID
        self.streamID = Int(Int32(streamID))
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
    private func write(
        _ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?
    ) {
        context.write(NIOAny(HTTP2Frame(streamID: frameStreamID, payload: payload)), promise: promise)
    }

    /// Writes one of this stream's frames and flushes it (at the end of the read in progress, if one is).
    private func writeAndFlush(
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
            alpnOffered: connection.alpnOffered)
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

    /// Runs the body program while the stream is writable and less than ``inFlightLimit`` of its DATA waits to reach
    /// the socket; called again when either changes. A call made while it runs (a write completing inside its flush)
    /// makes it go round once more instead of running inside itself.
    private func pump() {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        repeat {
            pumpAgain = false
            pumpOnce()
        } while pumpAgain && !finished
        pumping = false
    }

    private var pumping = false
    private var pumpAgain = false

    /// The most DATA bytes of a stream written but not yet in the socket.
    ///
    /// The stream's own bound, so that the connection's socket channel never has to stop being writable: NIOHTTP2
    /// 1.46.0 asserts (`ControlFrameBuffer`, "Received flush data frames while buffering control frames") when the
    /// connection turns writable again while control frames it buffered meanwhile were not flushed yet, which a
    /// download at full speed reached in the tests. The connection's high water mark is set far above the sum of
    /// these bounds (see `HTTP2Listener`).
    static let inFlightLimit: UInt64 = 256 << 10

    private func pumpOnce() {
        guard !finished, headSent, !pumpHeld, let context, var program, let plan else { return }
        defer { self.program = program }
        var wrote = false
        defer { if wrote { connection.flush(context) } }
        while context.channel.isWritable && position - sent < Self.inFlightLimit {
            let now = ContinuousClock.now
            switch program.next(position: position, capacity: blockSize, now: now) {
            case .send(let count):
                var buffer = context.channel.allocator.buffer(capacity: count)
                let filled = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                    let target = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                    guard plan.body.fill(target, position: position) else { return 0 }
                    program.filled(target, position: position)
                    return count
                }
                guard filled == count else {
                    // The file could not be read: the stream ends, as a dropped one.
                    faultFired = true
                    resetStream(.internalError, context: context, outcome: .dropped)
                    return
                }
                position += UInt64(count)
                // The last bytes of an unfaulted body carry END_STREAM themselves.
                let last = position == plan.body.length && program.faults.isEmpty
                let promise = context.eventLoop.makePromise(of: Void.self)
                let bytes = UInt64(count)
                promise.futureResult.assumeIsolated().whenSuccess { [self] in
                    // A journaled answer's count is final (a complete one counts its whole body).
                    guard !finished else { return }
                    sent += bytes
                    if position - sent < Self.inFlightLimit { pump() }
                }
                lastWrite = promise.futureResult
                write(.data(.init(data: .byteBuffer(buffer), endStream: last)), context: context, promise: promise)
                wrote = true
                if last {
                    promise.futureResult.assumeIsolated().whenComplete { [self] in complete($0) }
                    ending = .complete
                    pumpHeld = true
                    return
                }
            case .wait(let until), .stall(let until):
                noteProgram(program)
                pumpHeld = true
                schedule(after: until - now) { handler in
                    handler.pumpHeld = false
                    handler.pump()
                }
                return
            case .complete:
                let promise = context.eventLoop.makePromise(of: Void.self)
                promise.futureResult.assumeIsolated().whenComplete { [self] in complete($0) }
                let empty = context.channel.allocator.buffer(capacity: 0)
                write(.data(.init(data: .byteBuffer(empty), endStream: true)), context: context, promise: promise)
                wrote = true
                ending = .complete
                pumpHeld = true
                return
            case .goAway:
                // Graceful: this stream is the last the connection serves; it goes on to its end. The GOAWAY goes
                // out beside the DATA already written, so the client may see it before bytes the window still holds.
                connection.closesAfterStream = streamID
                connection.goAwayLast = max(streamID, connection.highestAnswered)
                context.writeAndFlush(
                    NIOAny(
                        HTTP2Frame(
                            streamID: .rootStream,
                            payload: .goAway(
                                lastStreamID: HTTP2StreamID(max(streamID, connection.highestAnswered)),
                                errorCode: .noError, opaqueData: nil))),
                    promise: nil)
            case .end(let ending):
                noteProgram(program)
                self.program = program
                pumpHeld = true
                context.flush()
                guard let lastWrite else {
                    end(ending, context: context)
                    return
                }
                lastWrite.assumeIsolated().whenComplete { [self] _ in
                    guard !finished, let context = self.context else { return }
                    end(ending, context: context)
                }
                return
            }
            noteProgram(program)
        }
    }

    private func noteProgram(_ program: BodyProgram) {
        if program.faultFired { faultFired = true }
    }

    /// The answer went out complete: journal it, and close the connection after a graceful GOAWAY.
    /// The answer's last frame was written (`result` success): journal it complete. A last frame that could not be
    /// written (the connection closed under it) ends the answer as the connection did.
    private func complete(_ result: Result<Void, any Error>) {
        if case .success = result {
            finish(.complete)
        } else {
            ending = connection.endedBy ?? .clientClosed
            finish(connection.endedBy ?? .clientClosed)
        }
    }

    /// Carries out an ending of the body program.
    private func end(_ ending: BodyProgram.Ending, context: ChannelHandlerContext) {
        faultFired = true
        switch ending {
        case .resetStream(let code):
            resetStream(code, context: context)
        case .goAway:
            goAway(lastStream: max(streamID, connection.highestAnswered), closing: .dropped, context: context)
        case .reset:
            closeConnection(.reset, context: context, abort: true)
        case .drop, .truncate, .malformedChunk:
            // Truncation and chunk lines are refused on this front end (`HTTP2StreamConnection.refusal`); a drop
            // ends the connection and every stream on it.
            closeConnection(.dropped, context: context, abort: false)
        }
    }

    /// RST_STREAM with `code` after what was written: the connection goes on.
    private func resetStream(
        _ code: FaultPlan.StreamErrorCode, context: ChannelHandlerContext, outcome: JournalOutcome = .streamReset
    ) {
        context.flush()
        ending = outcome
        pumpHeld = true
        let payload = HTTP2Frame.FramePayload.rstStream(HTTP2ErrorCode(networkCode: Int(code.value)))
        writeAndFlush(payload, context: context).assumeIsolated().whenComplete { [self] _ in
            finish(outcome)
        }
    }

    /// GOAWAY naming `lastStream`, then a close of the connection once it is written.
    private func goAway(lastStream: Int, closing outcome: JournalOutcome, context: ChannelHandlerContext) {
        context.flush()
        ending = outcome
        connection.endedBy = connection.endedBy ?? .dropped
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: HTTP2StreamID(lastStream), errorCode: .noError, opaqueData: nil))
        pumpHeld = true
        connection.goAwayLast = lastStream
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(frame), promise: written)
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            finish(outcome)
            _ = connection.closer?.closeGently()
        }
    }

    /// Ends the connection under every stream on it: a clean close, or (`abort`) a TCP reset.
    private func closeConnection(_ outcome: JournalOutcome, context: ChannelHandlerContext, abort: Bool) {
        context.flush()
        connection.endedBy = outcome
        ending = outcome
        pumpHeld = true
        // Every DATA byte before the fault's point is in the socket by now (see `lastWrite`).
        if abort, let closing = connection.closer?.abort() {
            closing.assumeIsolated().whenComplete { [self] _ in finish(outcome) }
        } else {
            finish(outcome)
            _ = connection.closer?.closeGently()
        }
    }

    // MARK: - Bookkeeping

    /// Runs `body` on the event loop after `delay`, unless the stream has finished by then (``finish(_:)`` cancels
    /// it: a closed stream's hour-long `head=stall` must not keep its handler and plan for the hour).
    private func schedule(after delay: Duration, _ body: @escaping (HTTP2StreamHandler) -> Void) {
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
    private func finish(_ outcome: JournalOutcome) {
        guard !finished else { return }
        finished = true
        scheduled?.cancel()
        scheduled = nil
        defer {
            if let openExchange { shared.openExchanges.close(openExchange) }
            openExchange = nil
        }
        guard let request, let plan else { return }
        if program?.faultFired == true { faultFired = true }
        // Every byte of a complete answer reached the socket, whether or not its last write reported back first.
        if outcome == .complete && request.method != "HEAD" { sent = plan.body.length }
        if outcome == .complete && connection.closesAfterStream == streamID {
            // The stream a graceful GOAWAY named has ended: the connection closes now.
            _ = connection.closer?.closeGently()
        }
        shared.pipeline.complete(
            CompletedExchange(
                request: request, plan: plan, bodyBytesSent: sent, outcome: outcome, startedAt: startedAt,
                abandoned: neverSent || (outcome == .clientClosed && !faultFired),
                attemptGivenBack: openExchange?.attemptGivenBack.load(ordering: .relaxed) ?? false))
    }
}
