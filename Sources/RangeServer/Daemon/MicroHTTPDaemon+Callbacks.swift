import CMicroHTTPD
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - libmicrohttpd callbacks

func daemonFrom(_ pointer: UnsafeMutableRawPointer?) -> MicroHTTPDaemon {
    Unmanaged<MicroHTTPDaemon>.fromOpaque(pointer!).takeUnretainedValue()
}

let uriLogged:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
        _, uri, _ in
        let context = RequestContext(target: uri.map { String(cString: $0) } ?? "/")
        return Unmanaged.passRetained(context).toOpaque()
    }

let connectionNotify:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        MHD_ConnectionNotificationCode
    ) -> Void = { daemonPointer, connection, socketContext, code in
        guard let socketContext else { return }
        switch code {
        case .CONNECTION_NOTIFY_STARTED:
            let id = daemonFrom(daemonPointer).counters.connections.wrappingAdd(1, ordering: .relaxed).newValue
            let (address, port) = connection.map(peer) ?? ("unknown", 0)
            let state = ConnectionState(id: id, peerAddress: address, peerPort: port)
            socketContext.pointee = Unmanaged.passRetained(state).toOpaque()
        case .CONNECTION_NOTIFY_CLOSED:
            guard let raw = socketContext.pointee else { return }
            socketContext.pointee = nil
            Unmanaged<ConnectionState>.fromOpaque(raw).release()
        default:
            return
        }
    }

let requestCompleted:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        MHD_RequestTerminationCode
    ) -> Void = { daemonPointer, connection, contextPointer, code in
        guard let contextPointer, let raw = contextPointer.pointee else { return }
        contextPointer.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        // After the entry is stored: a reader waiting for the run to settle then finds it.
        defer { context.close() }
        // Moved out, not copied: the context dies here.
        guard let request = context.request.take(), let plan = context.plan.take() else { return }
        let outcome: JournalOutcome
        if let recorded = context.outcome {
            outcome = recorded
        } else if code == .REQUEST_TERMINATED_COMPLETED_OK {
            outcome = .complete
        } else if context.stalling || (code == .REQUEST_TERMINATED_DAEMON_SHUTDOWN && plan.delivery.stalls) {
            // Inside the stall: the client (or the shutdown) ended a response the stall held, whichever noticed first.
            outcome = .stalled
        } else {
            outcome = .clientClosed
        }
        // A sendfile body is not counted chunk by chunk; libmicrohttpd only says whether it all went out.
        var sent = context.bodyBytesSent
        if outcome == .complete && request.method != "HEAD" {
            sent = plan.body.length
        } else if context.bodyBytesHandedOver > sent, let base = context.bodySocketBase, let connection {
            // Ended between libmicrohttpd's write of a block and its next call to the body reader (a stop, or a
            // client that closed after the last bytes before a stall): the socket's own count says how much of
            // that block was written.
            let written = cmhd_bytes_written(cmhd_connection_fd(connection))
            if written >= base {
                sent = min(context.bodyBytesHandedOver, max(sent, UInt64(written - base)))
            }
        }
        if outcome == .clientClosed, !request.isTLS, let connection {
            // Written is not delivered: what still sits untransmitted in the socket's send queue never reached
            // the client. (A reset empties the queue, so this only helps when the peer closed in order.) Under TLS
            // the queue holds records whose framing is unknown here (a paced body's records are small), so no body
            // count can be taken off soundly: the count stays the bytes handed to TLS, never less than arrived.
            let unsent = cmhd_unsent_bytes(cmhd_connection_fd(connection))
            if unsent > 0 { sent -= min(sent, UInt64(unsent)) }
        }
        let exchange = CompletedExchange(
            request: consume request, plan: consume plan, bodyBytesSent: sent, outcome: outcome,
            startedAt: context.startedAt, abandoned: outcome == .clientClosed && !context.faultFired,
            attemptGivenBack: context.openExchange?.attemptGivenBack.load(ordering: .relaxed) ?? false,
            endedAt: context.endedAt
        )
        // Borrowed, not retained (see the access handler).
        Unmanaged<MicroHTTPDaemon>.fromOpaque(daemonPointer!)._withUnsafeGuaranteedRef { $0.completion(exchange) }
    }

let headerCollector:
    @convention(c) (UnsafeMutableRawPointer?, MHD_ValueKind, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> MHD_Result =
        {
            box, _, key, value in
            guard let box, let key else { return .YES }
            box.assumingMemoryBound(to: [HeaderField].self).pointee.append(
                HeaderField(String(cString: key), value.map { String(cString: $0) } ?? ""))
            return .YES
        }

let accessHandler:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutablePointer<Int>?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) -> MHD_Result = { daemonPointer, connection, _, method, version, uploadData, uploadSize, contextPointer in
        guard let daemonPointer, let connection, let contextPointer, let raw = contextPointer.pointee else {
            return .NO
        }
        // Borrowed, not retained: every pool thread retaining the one daemon object per call kept moving its
        // reference count between cores. The daemon outlives its callbacks (`stop()` joins the threads).
        return Unmanaged<MicroHTTPDaemon>.fromOpaque(daemonPointer)._withUnsafeGuaranteedRef { daemon in
            handleAccess(
                daemon: daemon, connection: connection, method: method, version: version, uploadData: uploadData,
                uploadSize: uploadSize, context: Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue())
        }
    }

/// The access handler's work, with the daemon borrowed.
func handleAccess(
    daemon: MicroHTTPDaemon, connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
    uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>?, context: RequestContext
) -> MHD_Result {
    switch context.phase {
    case .receivingHeaders:
        // Request bodies are read and discarded, except a custom route's, kept up to its limit.
        if let uploadSize, uploadSize.pointee > 0 {
            if let bodyLimit = daemon.bodyLimit {
                keepBody(uploadData, count: uploadSize.pointee, context: context, limit: bodyLimit)
            }
            uploadSize.pointee = 0
            return .YES
        }
        guard let arrival = context.arrival else {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            context.arrivalTime = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
            let takeArrival = { daemon.counters.arrivals.wrappingAdd(1, ordering: .relaxed).newValue }
            // A scenario GET counts its attempt now, under the same lock as its arrival number, so attempts follow
            // arrival order even when a later request is planned first (its body came sooner, its thread ran first).
            let carrier = MicroHTTPConnection(socket: cmhd_connection_fd(connection), isTLS: daemon.isTLS)
            context.connection = carrier
            var exchange: OpenExchange?
            if let admission = daemon.admission, context.target.hasUTF8Prefix("/scenario/") {
                (context.arrival, context.reservedAttempt, exchange) = admission(
                    methodToken(method), context.target, carrier, takeArrival)
            } else {
                context.arrival = takeArrival()
            }
            // A control request is never journaled, and one waiting for the server to settle must not wait for itself.
            if let exchanges = daemon.openExchanges, !context.target.hasUTF8Prefix("/_control/") {
                context.open(
                    exchange ?? OpenExchange(run: nil, scenario: nil, route: nil, attempt: nil, connection: carrier),
                    in: exchanges)
            }
            // The first call only announces the headers; answering now would cost keep-alive.
            return .YES
        }
        // Collected straight into the array, through a pointer: no object to carry it to the callback.
        var headers: [HeaderField] = []
        headers.reserveCapacity(4)
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND, headerCollector, UnsafeMutableRawPointer(pointer))
        }
        let state = ConnectionState.of(connection)
        let request = IncomingRequest(
            method: methodToken(method),
            target: context.target,
            httpVersion: versionToken(version),
            headers: headers,
            peerAddress: state?.peerAddress ?? "unknown",
            peerPort: state?.peerPort ?? 0,
            connectionID: state?.id ?? 0,
            arrival: arrival,
            arrivalTime: context.arrivalTime,
            reservedAttempt: context.reservedAttempt,
            isTLS: daemon.isTLS,
            connection: context.connection ?? MicroHTTPConnection(socket: -1, isTLS: daemon.isTLS),
            body: context.body,
            bodyTooLarge: context.bodyTooLarge
        )
        context.body = []
        let plan = daemon.handler(request)
        context.request = consume request
        if let deferred = plan.deferred {
            // An embedder's handler runs as a Swift task; the connection waits suspended, holding no thread.
            guard let token = daemon.suspend(connection) else {
                context.plan = .text(503, "the server is stopping")
                return delayOrQueue(context: context, connection: connection, daemon: daemon)
            }
            context.phase = .completingPlan
            context.plan = consume plan
            let box = UncheckedBox(context)
            Task {
                var answer = await deferred()
                answer.journaled = box.value.plan?.journaled ?? true
                box.value.plan = answer
                daemon.resume(token)
            }
            return .YES
        }
        if plan.pendingDigest != nil, let token = daemon.suspend(connection) {
            // Hashing a large representation runs off the pool; the connection waits suspended and holds no
            // thread meanwhile. The plan is final apart from that one field.
            context.phase = .completingPlan
            context.plan = consume plan
            let box = UncheckedBox(context)
            DispatchQueue.global().async {
                box.value.plan!.completeDigest()
                daemon.resume(token)
            }
            return .YES
        }
        // A response shaped by a fault from its first byte is not one a client leaves of its own accord.
        if !plan.faults.isEmpty, FaultPlan.shapesResponse(plan.faults) { context.faultFired = true }
        context.plan = consume plan
        return delayOrQueue(context: context, connection: connection, daemon: daemon)
    case .completingPlan:
        return delayOrQueue(context: context, connection: connection, daemon: daemon)
    case .delaying:
        if let ends = context.delayEnds, ContinuousClock.now < ends {
            // Woken early to look at the socket: a client that gave up on the delay ends the request now.
            if daemon.peerHasClosed(connection) {
                context.faultFired = true
                return .NO
            }
            if daemon.suspend(connection, for: min(ends - ContinuousClock.now, MicroHTTPDaemon.watchInterval)) {
                return .YES
            }
        }
        if context.plan!.delivery.silence != nil { return endSilence(context) }
        return queue(context: context, connection: connection, daemon: daemon)
    case .queued:
        return .YES
    }
}

/// The request method as a string: a literal for the methods nearly every request uses (no copy, no UTF-8
/// check), otherwise a copy; `GET` when libmicrohttpd passed none.
func methodToken(_ token: UnsafePointer<CChar>?) -> String {
    guard let token else { return "GET" }
    if token.spells("GET") { return "GET" }
    if token.spells("HEAD") { return "HEAD" }
    return String(cString: token)
}

/// The HTTP version as a string, the same way as `methodToken`; `HTTP/1.1` when libmicrohttpd passed none.
func versionToken(_ token: UnsafePointer<CChar>?) -> String {
    guard let token else { return "HTTP/1.1" }
    if token.spells("HTTP/1.1") { return "HTTP/1.1" }
    if token.spells("HTTP/1.0") { return "HTTP/1.0" }
    return String(cString: token)
}

extension UnsafePointer<CChar> {
    /// Whether this C string is exactly `literal`. The `String` results above are literals of their own: turning a
    /// `StaticString` into a `String` went through the runtime for every request.
    func spells(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        for index in 0..<count where UInt8(bitPattern: self[index]) != literal.utf8Start[index] { return false }
        return self[count] == 0
    }
}

/// Waits out a `delay` fault, or queues the response at once.
func delayOrQueue(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> MHD_Result {
    // Read in place: a copy of the plan would retain and release every field of it.
    let silence = context.plan!.delivery.silence
    if let delay = silence ?? context.plan!.delivery.delay, delay > .zero {
        context.phase = .delaying
        context.delayEnds = ContinuousClock.now + delay
        // Withheld from the start: a client that gives up on it did not leave a healthy response.
        if silence != nil { context.faultFired = true }
        // In slices, looking at the socket between them (see the `.delaying` phase).
        if daemon.suspend(connection, for: min(delay, MicroHTTPDaemon.watchInterval)) { return .YES }
    }
    if silence != nil { return endSilence(context) }
    return queue(context: context, connection: connection, daemon: daemon)
}

/// Ends a response that was never to be answered (`head=stall`) when its silence is over or the server stops: the
/// connection closes without a byte, journaled as stalled.
func endSilence(_ context: RequestContext) -> MHD_Result {
    context.faultFired = true
    context.outcome = .stalled
    return .NO
}

/// Carries a request context to the worker that completes its plan's digest; the connection is suspended
/// meanwhile, so nothing else touches the context.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

func peer(_ connection: OpaquePointer) -> (address: String, port: Int) {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        var port: UInt16 = 0
        buffer.initialize(repeating: 0)
        guard cmhd_connection_peer(connection, buffer.baseAddress!, buffer.count, &port) == 0 else {
            return ("unknown", 0)
        }
        return (String(cString: buffer.baseAddress!), Int(port))
    }
}

/// Keeps the next part of a request body for a custom route, up to its limit; past it, the body is dropped and the
/// request marked too large (answered 413 by the router).
private func keepBody(
    _ data: UnsafePointer<CChar>?, count: Int, context: RequestContext, limit: MicroHTTPDaemon.BodyLimit
) {
    let keep = context.bodyLimit ?? limit(context.target)
    context.bodyLimit = keep
    guard keep > 0, !context.bodyTooLarge, let data else { return }
    guard context.body.count + count <= keep else {
        context.bodyTooLarge = true
        context.body = []
        return
    }
    data.withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
        context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    }
}
