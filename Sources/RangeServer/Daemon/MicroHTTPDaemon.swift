import CMicroHTTPD
import Dispatch
import NIOConcurrencyHelpers
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What happened to one exchange, handed to the server when libmicrohttpd reports it finished.
struct CompletedExchange: Sendable {
    var request: IncomingRequest
    var plan: ResponsePlan
    var bodyBytesSent: UInt64
    var outcome: JournalOutcome
    var startedAt: ContinuousClock.Instant
}

/// The only type that talks to libmicrohttpd.
///
/// It turns raw connections into `IncomingRequest` values, asks `handler` for a `ResponsePlan`, and carries
/// the plan out: sendfile for plain file bodies, a content reader for everything that is generated, paced
/// or faulted. Waits (delay, stall, rate) suspend the connection and resume it from `ResumeScheduler`, so a
/// stalled connection holds no thread.
final class MicroHTTPDaemon: @unchecked Sendable {
    typealias Handler = @Sendable (IncomingRequest) -> ResponsePlan
    typealias Completion = @Sendable (CompletedExchange) -> Void

    /// The bound port (the real one when 0 was asked for).
    let port: Int
    /// Whether the listening socket is IPv6.
    let isIPv6: Bool

    fileprivate let handler: Handler
    fileprivate let completion: Completion
    fileprivate let connectionCounter = Atomic<Int>(0)
    fileprivate let arrivalCounter = Atomic<Int>(0)
    fileprivate let suspensions: NIOLockedValueBox<SuspensionTable>
    /// Wakes connections whose waits are over; one thread for all of them.
    private let scheduler: ResumeScheduler
    private var daemon: OpaquePointer?

    /// Starts the daemon on `host:port`.
    ///
    /// - Parameters:
    ///   - host: a numeric IPv4 or IPv6 address.
    ///   - port: the port, 0 for any free one.
    ///   - threads: the size of libmicrohttpd's thread pool.
    ///   - connectionLimit: the most simultaneous connections.
    ///   - connectionMemory: each connection's libmicrohttpd pool, in bytes (see ``defaultConnectionMemory``).
    ///   - handler: decides the response; called on a pool thread, must not block for long.
    ///   - completion: called once per answered request, when libmicrohttpd is done with it.
    init(
        host: String, port: Int, threads: Int, connectionLimit: Int, connectionTimeout: Int, connectionMemory: Int,
        handler: @escaping Handler, completion: @escaping Completion
    ) throws {
        self.handler = handler
        self.completion = completion
        let suspensions = NIOLockedValueBox(SuspensionTable())
        self.suspensions = suspensions
        scheduler = ResumeScheduler { due in
            // One lock for the whole batch: the daemon's threads see every due connection in one wake-up.
            suspensions.withLockedValue { table in
                for token in due {
                    if let connection = table.pending.removeValue(forKey: token) {
                        MHD_resume_connection(connection.pointer)
                    }
                }
            }
        }
        guard (0...65535).contains(port) else {
            throw RangeServerError.invalidConfiguration("invalid port \(port): must be 0...65535")
        }
        var ipv6: Int32 = 0
        var error: Int32 = 0
        let fd = cmhd_listen(host, UInt16(port), 1024, &ipv6, &error)
        guard fd >= 0 else {
            if error < 0 {
                scheduler.stop()
                throw RangeServerError.bindFailed("invalid host '\(host)': not a numeric IPv4 or IPv6 address")
            }
            let reason = String(cString: strerror(error))
            scheduler.stop()
            throw RangeServerError.bindFailed("cannot listen on \(host):\(port): \(reason)")
        }
        self.isIPv6 = ipv6 != 0
        self.port = Int(cmhd_socket_port(fd))

        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        #if os(Linux)
        flags |= MHD_USE_EPOLL.rawValue
        #else
        flags |= MHD_USE_POLL.rawValue
        #endif
        if ipv6 != 0 { flags |= MHD_USE_IPv6.rawValue }

        let context = Unmanaged.passUnretained(self).toOpaque()
        daemon = cmhd_start_daemon(
            flags, fd, UInt32(max(1, threads)), UInt32(max(1, connectionLimit)), UInt32(max(0, connectionTimeout)),
            connectionMemory,
            accessHandler, context,
            requestCompleted, context,
            connectionNotify, context,
            uriLogged, context
        )
        guard daemon != nil else {
            scheduler.stop()
            close(fd)
            throw RangeServerError.daemonStartFailed("libmicrohttpd refused to start on \(host):\(port)")
        }
    }

    /// Stops the daemon: ends stalled and paced responses, closes every connection, joins the threads.
    func stop() {
        guard let daemon else { return }
        self.daemon = nil
        scheduler.stop()
        // libmicrohttpd forbids stopping with suspended connections, so wake them all first; their
        // readers see `stopping` and end the body.
        suspensions.withLockedValue { table in
            table.stopping = true
            for connection in table.pending.values { MHD_resume_connection(connection.pointer) }
            table.pending.removeAll()
        }
        MHD_stop_daemon(daemon)
    }

    deinit { stop() }

    /// Suspends `connection` until `resume(_:)` is called with the returned token. Must be called from a
    /// libmicrohttpd callback.
    ///
    /// - Returns: nil when the daemon is stopping and the caller must end the response instead.
    fileprivate func suspend(_ connection: OpaquePointer) -> UInt64? {
        let handle = ConnectionHandle(pointer: connection)
        return suspensions.withLockedValue { table in
            guard !table.stopping else { return nil }
            table.nextToken &+= 1
            table.pending[table.nextToken] = handle
            MHD_suspend_connection(connection)
            return table.nextToken
        }
    }

    /// Resumes the connection suspended under `token`, unless `stop()` already did. Thread-safe.
    fileprivate func resume(_ token: UInt64) {
        suspensions.withLockedValue { table in
            if let connection = table.pending.removeValue(forKey: token) {
                MHD_resume_connection(connection.pointer)
            }
        }
    }

    /// Suspends `connection` and resumes it after `duration`. Must be called from a libmicrohttpd callback.
    ///
    /// - Returns: false when the daemon is stopping and the caller must end the response instead.
    fileprivate func suspend(_ connection: OpaquePointer, for duration: Duration) -> Bool {
        guard let token = suspend(connection) else { return false }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000
        scheduler.schedule(token, after: UInt64(clamping: total))
        return true
    }

    fileprivate var isStopping: Bool { suspensions.withLockedValue { $0.stopping } }
}

/// Connections waiting on the scheduler, so `stop()` can wake them.
struct SuspensionTable {
    var stopping = false
    var nextToken: UInt64 = 0
    var pending: [UInt64: ConnectionHandle] = [:]
}

/// A libmicrohttpd connection pointer that may cross to the scheduler's thread; only `MHD_resume_connection`,
/// which is thread-safe, is called on it there.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Per-request state, from the first line of the request to libmicrohttpd's completion notice.
private final class RequestContext: @unchecked Sendable {
    enum Phase { case receivingHeaders, preparing, delaying, queued }

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

// MARK: - libmicrohttpd callbacks

private func daemonFrom(_ pointer: UnsafeMutableRawPointer?) -> MicroHTTPDaemon {
    Unmanaged<MicroHTTPDaemon>.fromOpaque(pointer!).takeUnretainedValue()
}

private let uriLogged:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
        _, uri, _ in
        let context = RequestContext(target: uri.map { String(cString: $0) } ?? "/")
        return Unmanaged.passRetained(context).toOpaque()
    }

private let connectionNotify:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        MHD_ConnectionNotificationCode
    ) -> Void = { daemonPointer, connection, socketContext, code in
        guard let socketContext else { return }
        switch code {
        case .CONNECTION_NOTIFY_STARTED:
            let id = daemonFrom(daemonPointer).connectionCounter.wrappingAdd(1, ordering: .relaxed).newValue
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

/// What stays the same for every request on one connection, worked out once when it opens (the peer's
/// address used to be formatted, `inet_ntop` and a new string, for every request), the buffer small file
/// bodies are read into, and the response last built on that buffer.
///
/// `@unchecked Sendable`: libmicrohttpd runs one connection's callbacks on one thread at a time, and only
/// those touch the buffer and the kept response.
private final class ConnectionState: @unchecked Sendable {
    let id: Int
    let peerAddress: String
    let peerPort: Int
    private var buffer: UnsafeMutableRawPointer?
    private var bufferCapacity = 0
    /// The response last built on `buffer`, kept for the connection's next small file body (see
    /// `smallFileResponse`).
    private var kept: KeptResponse?

    /// A libmicrohttpd response this connection holds a reference to, and what it was built with. A class, so an
    /// update changes it in place instead of copying it out of the optional and back.
    private final class KeptResponse {
        let response: OpaquePointer
        /// The body length: the response sends this many bytes of `buffer`.
        let length: Int
        /// The header fields added, in order, after `Date`.
        var headers: [HeaderField]
        /// The second the `Date` value spells, and the value, NUL-terminated (the thread's `ResponseDate` buffer
        /// is rewritten when the second changes, and removing a field takes its value).
        var dateSecond: Int64
        var dateText: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        init(response: OpaquePointer, length: Int, headers: [HeaderField], dateSecond: Int64) {
            self.response = response
            self.length = length
            self.headers = headers
            self.dateSecond = dateSecond
        }
    }

    init(id: Int, peerAddress: String, peerPort: Int) {
        self.id = id
        self.peerAddress = peerAddress
        self.peerPort = peerPort
    }

    deinit {
        // The connection is closed, so libmicrohttpd has let go of the response; this is the last reference,
        // and the buffer it points into can go after it.
        if let kept { MHD_destroy_response(kept.response) }
        free(buffer)
    }

    /// The connection's body buffer, grown to at least `capacity` bytes (at most `smallBodyLimit`).
    private func bodyBuffer(capacity: Int) -> UnsafeMutableRawPointer {
        if let buffer, bufferCapacity >= capacity { return buffer }
        // The kept response points into the old buffer.
        dropKeptResponse()
        free(buffer)
        // Rounded up to a page so a connection reading ranges of varying size grows it only a few times.
        bufferCapacity = (capacity + 4095) & ~4095
        let grown = malloc(bufferCapacity)!
        buffer = grown
        return grown
    }

    private func dropKeptResponse() {
        if let kept { MHD_destroy_response(kept.response) }
        kept = nil
    }

    /// A response carrying `length` bytes of `file` from `offset`, with `Date` and `headers`, or nil when the bytes
    /// cannot be read or libmicrohttpd refuses the response.
    ///
    /// The bytes go into the connection's own body buffer, which libmicrohttpd sends without copying or freeing
    /// (`RESPMEM_PERSISTENT`): a connection has one response at a time, and it is sent before the next request on
    /// the connection is read, so the buffer is free again by the time it is reused. That saves a `malloc` and a
    /// `free` of the body per request.
    ///
    /// The response itself is kept for the next request on the connection: libmicrohttpd counts references to
    /// responses and lets go of its own once the exchange ends, so by the next request only the connection
    /// holds it. When the next body has the same length, only the fields from the first one that differs on
    /// (for a range of a file, `Content-Range`, the last) are removed and added again; `Date` comes first, so it
    /// and everything after it are replaced only when the second changes. Building a response costs an allocation
    /// and a lock, and each field added (about 900 instructions) an allocation for the field and copies of its
    /// name and value, and removing one about 500: re-adding six unchanged fields and recreating the response was
    /// most of what libmicrohttpd cost a small range request in our code.
    func smallFileResponse(
        file: OpenFile, offset: UInt64, length: Int, headers: [HeaderField]
    )
        -> OpaquePointer?
    {
        let buffer = bodyBuffer(capacity: length)
        guard file.read(offset: offset, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) else {
            return nil
        }
        let date = ResponseDate.now()
        if kept?.length == length, let response = updateKeptResponse(headers: headers, date: date) {
            return response
        }
        dropKeptResponse()
        guard let response = MHD_create_response_from_buffer(length, buffer, .RESPMEM_PERSISTENT) else { return nil }
        guard MHD_add_response_header(response, dateFieldName.cString, date.text) == .YES,
            withCStrings(headers[...], { MHD_add_response_header(response, $0, $1) == .YES })
        else {
            MHD_destroy_response(response)
            return nil
        }
        let entry = KeptResponse(response: response, length: length, headers: headers, dateSecond: date.second)
        copyDate(date.text, into: &entry.dateText)
        kept = entry
        return response
    }

    /// Brings the kept response's fields up to `headers` and `date`; nil when libmicrohttpd refused a change (the
    /// caller then builds a new response).
    private func updateKeptResponse(
        headers: [HeaderField], date: (second: Int64, text: UnsafePointer<CChar>)
    ) -> OpaquePointer? {
        guard let entry = kept else { return nil }
        let old = entry.headers
        var first = 0
        let common = min(old.count, headers.count)
        while first < common && old[first].hasSameBytes(as: headers[first]) { first += 1 }
        let dateChanged = entry.dateSecond != date.second
        if first == old.count && first == headers.count && !dateChanged { return entry.response }
        let response = entry.response
        if dateChanged {
            // `Date` was added first: it and every field after it come off and go back on in order, so the order on
            // the wire stays what building afresh gives.
            let removed = withUnsafeBytes(of: &entry.dateText) { bytes in
                MHD_del_response_header(
                    response, dateFieldName.cString, bytes.baseAddress!.assumingMemoryBound(to: CChar.self)) == .YES
            }
            guard removed else { return nil }
            first = 0
        }
        guard withCStrings(old[first...], { MHD_del_response_header(response, $0, $1) == .YES }),
            !dateChanged || MHD_add_response_header(response, dateFieldName.cString, date.text) == .YES,
            withCStrings(headers[first...], { MHD_add_response_header(response, $0, $1) == .YES })
        else {
            return nil
        }
        entry.headers = headers
        entry.dateSecond = date.second
        copyDate(date.text, into: &entry.dateText)
        return response
    }

    private func copyDate(
        _ text: UnsafePointer<CChar>, into storage: inout (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    ) {
        withUnsafeMutableBytes(of: &storage) { bytes in
            let length = min(strlen(text), bytes.count - 1)
            bytes.copyMemory(from: UnsafeRawBufferPointer(start: text, count: length))
            bytes[length] = 0
        }
    }

    /// The state libmicrohttpd keeps for `connection`, or nil (a connection that started before the
    /// callback was installed; there is none).
    static func of(_ connection: OpaquePointer) -> ConnectionState? {
        cmhd_connection_socket_context(connection).map {
            Unmanaged<ConnectionState>.fromOpaque($0).takeUnretainedValue()
        }
    }
}

private let requestCompleted:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        MHD_RequestTerminationCode
    ) -> Void = { daemonPointer, connection, contextPointer, code in
        guard let contextPointer, let raw = contextPointer.pointee else { return }
        contextPointer.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        // Moved out, not copied: the context dies here.
        guard let request = context.request.take(), let plan = context.plan.take() else { return }
        let outcome: JournalOutcome
        if let recorded = context.outcome {
            outcome = recorded
        } else if code == .REQUEST_TERMINATED_COMPLETED_OK {
            outcome = .complete
        } else if code == .REQUEST_TERMINATED_DAEMON_SHUTDOWN && plan.delivery.stallAfter != nil {
            outcome = .stalled
        } else {
            outcome = .clientClosed
        }
        // A sendfile body is not counted chunk by chunk; libmicrohttpd only says whether it all went out.
        var sent = context.bodyBytesSent
        if outcome == .complete && request.method != "HEAD" { sent = plan.body.length }
        if outcome == .clientClosed, let connection {
            // Written is not delivered: what still sits unacknowledged in the socket's send queue never reached
            // the client. (A reset empties the queue, so this only helps when the peer closed in order.)
            let unsent = cmhd_unsent_bytes(cmhd_connection_fd(connection))
            if unsent > 0 { sent -= min(sent, UInt64(unsent)) }
        }
        let exchange = CompletedExchange(
            request: consume request, plan: consume plan, bodyBytesSent: sent, outcome: outcome,
            startedAt: context.startedAt
        )
        // Borrowed, not retained (see the access handler).
        Unmanaged<MicroHTTPDaemon>.fromOpaque(daemonPointer!)._withUnsafeGuaranteedRef { $0.completion(exchange) }
    }

private let headerCollector:
    @convention(c) (UnsafeMutableRawPointer?, MHD_ValueKind, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> MHD_Result =
        {
            box, _, key, value in
            guard let box, let key else { return .YES }
            box.assumingMemoryBound(to: [HeaderField].self).pointee.append(
                HeaderField(lowercasedName(key), value.map { String(cString: $0) } ?? ""))
            return .YES
        }

/// A header name with ASCII letters lower-cased, decoded in one pass: no intermediate String, and none at all
/// on the heap for names of up to 15 bytes.
private func lowercasedName(_ name: UnsafePointer<CChar>) -> String {
    let length = strlen(name)
    return String(unsafeUninitializedCapacity: length) { output in
        for index in 0..<length {
            output[index] = UInt8(bitPattern: name[index]).asciiLowercased
        }
        return length
    }
}

private let accessHandler:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutablePointer<Int>?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) -> MHD_Result = { daemonPointer, connection, _, method, version, _, uploadSize, contextPointer in
        guard let daemonPointer, let connection, let contextPointer, let raw = contextPointer.pointee else {
            return .NO
        }
        // Borrowed, not retained: every pool thread retaining the one daemon object per call kept moving its
        // reference count between cores. The daemon outlives its callbacks (`stop()` joins the threads).
        return Unmanaged<MicroHTTPDaemon>.fromOpaque(daemonPointer)._withUnsafeGuaranteedRef { daemon in
            handleAccess(
                daemon: daemon, connection: connection, method: method, version: version, uploadSize: uploadSize,
                context: Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue())
        }
    }

/// The access handler's work, with the daemon borrowed.
private func handleAccess(
    daemon: MicroHTTPDaemon, connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
    uploadSize: UnsafeMutablePointer<Int>?, context: RequestContext
) -> MHD_Result {
    switch context.phase {
    case .receivingHeaders:
        // Request bodies are read and discarded: no resource takes one.
        if let uploadSize, uploadSize.pointee > 0 {
            uploadSize.pointee = 0
            return .YES
        }
        guard let arrival = context.arrival else {
            context.arrival = daemon.arrivalCounter.wrappingAdd(1, ordering: .relaxed).newValue
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
            arrival: arrival
        )
        let plan = daemon.handler(request)
        context.request = consume request
        if let preparation = plan.preparation, let token = daemon.suspend(connection) {
            // Slow work (hashing a large representation) runs off the pool; the connection waits
            // suspended and holds no thread meanwhile.
            context.phase = .preparing
            context.plan = consume plan
            let box = UncheckedBox(context)
            DispatchQueue.global().async {
                box.value.plan = preparation()
                daemon.resume(token)
            }
            return .YES
        }
        context.plan = consume plan
        return delayOrQueue(context: context, connection: connection, daemon: daemon)
    case .preparing:
        return delayOrQueue(context: context, connection: connection, daemon: daemon)
    case .delaying:
        return queue(context: context, connection: connection, daemon: daemon)
    case .queued:
        return .YES
    }
}

/// The request method as a string: a literal for the methods nearly every request uses (no copy, no UTF-8
/// check), otherwise a copy; `GET` when libmicrohttpd passed none.
private func methodToken(_ token: UnsafePointer<CChar>?) -> String {
    guard let token else { return "GET" }
    if token.spells("GET") { return "GET" }
    if token.spells("HEAD") { return "HEAD" }
    return String(cString: token)
}

/// The HTTP version as a string, the same way as `methodToken`; `HTTP/1.1` when libmicrohttpd passed none.
private func versionToken(_ token: UnsafePointer<CChar>?) -> String {
    guard let token else { return "HTTP/1.1" }
    if token.spells("HTTP/1.1") { return "HTTP/1.1" }
    if token.spells("HTTP/1.0") { return "HTTP/1.0" }
    return String(cString: token)
}

extension UnsafePointer<CChar> {
    /// Whether this C string is exactly `literal`. The `String` results above are literals of their own: turning a
    /// `StaticString` into a `String` went through the runtime for every request.
    fileprivate func spells(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        for index in 0..<count where UInt8(bitPattern: self[index]) != literal.utf8Start[index] { return false }
        return self[count] == 0
    }
}

/// Waits out a `delay` fault, or queues the response at once.
private func delayOrQueue(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> MHD_Result {
    // Cleared and read in place: a copy of the plan would retain and release every field of it.
    context.plan!.preparation = nil
    if let delay = context.plan!.delivery.delay, delay > .zero {
        context.phase = .delaying
        if daemon.suspend(connection, for: delay) { return .YES }
    }
    return queue(context: context, connection: connection, daemon: daemon)
}

/// Carries a request context to the worker that prepares its plan; the connection is suspended meanwhile,
/// so nothing else touches the context.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

private func peer(_ connection: OpaquePointer) -> (address: String, port: Int) {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        var port: UInt16 = 0
        buffer.initialize(repeating: 0)
        guard cmhd_connection_peer(connection, buffer.baseAddress!, buffer.count, &port) == 0 else {
            return ("unknown", 0)
        }
        return (String(cString: buffer.baseAddress!), Int(port))
    }
}

/// Queues the response to the plan in `context`.
private func queue(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> MHD_Result {
    context.phase = .queued
    let status = UInt32(context.plan!.status)
    if case .content(.file(let file), let offset, let length) = context.plan!.body, length > 0,
        length <= smallBodyLimit, context.plan!.delivery.isPlain, context.request?.method != "HEAD",
        let state = ConnectionState.of(connection)
    {
        // The connection keeps this response for its next request; libmicrohttpd holds its own reference meanwhile.
        guard
            let response = state.smallFileResponse(
                file: file, offset: offset, length: Int(length), headers: context.plan!.headers)
        else { return .NO }
        return MHD_queue_response(connection, status, response)
    }
    guard let response = makeResponse(context: context, connection: connection, daemon: daemon) else {
        return .NO
    }
    defer { MHD_destroy_response(response) }
    // Ours, formatted once a second, so libmicrohttpd adds none of its own (see `ResponseDate`); first, as on a
    // kept response.
    _ = MHD_add_response_header(response, dateFieldName.cString, ResponseDate.current())
    _ = withCStrings(context.plan!.headers[...]) { name, value in
        _ = MHD_add_response_header(response, name, value)
        return true
    }
    return MHD_queue_response(connection, status, response)
}

extension HeaderField {
    /// Whether `other` has the same name and value, byte for byte (see `String.hasSameUTF8(as:)`): equal-looking
    /// fields with other bytes must not leave the old bytes on the wire.
    fileprivate func hasSameBytes(as other: HeaderField) -> Bool {
        name.hasSameUTF8(as: other.name) && value.hasSameUTF8(as: other.value)
    }
}

/// `Date`, NUL-terminated in the binary: a `String` argument would be copied to the heap for the call.
private let dateFieldName: StaticString = "Date"

extension StaticString {
    /// The literal's bytes as a C string; the literal is NUL-terminated in the binary.
    fileprivate var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// Calls `body` with each field's name and value as NUL-terminated copies in one stack buffer, in order, until it
/// returns false; returns whether every call returned true.
///
/// Passing a `String` where C wants a `char *` allocates a C copy of every small (up to 15 bytes) string, and
/// most names and values here are small: that was ten allocations per response.
private func withCStrings(
    _ headers: ArraySlice<HeaderField>,
    _ body: (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Bool
) -> Bool {
    var size = 0
    for header in headers { size += header.name.utf8.count + header.value.utf8.count + 2 }
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer in
        var offset = 0
        func copy(_ text: String) -> UnsafePointer<CChar> {
            let start = buffer.baseAddress! + offset
            let copied = text.utf8.withContiguousStorageIfAvailable { bytes in
                if let source = bytes.baseAddress {
                    UnsafeMutableRawPointer(start).copyMemory(from: source, byteCount: bytes.count)
                }
                return bytes.count
            }
            if let copied {
                offset += copied
            } else {
                for byte in text.utf8 {
                    buffer[offset] = CChar(bitPattern: byte)
                    offset += 1
                }
            }
            buffer[offset] = 0
            offset += 1
            return UnsafePointer(start)
        }
        for header in headers {
            let name = copy(header.name)
            let value = copy(header.value)
            guard body(name, value) else { return false }
        }
        return true
    }
}

private func makeResponse(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> OpaquePointer?
{
    let isHead = context.request?.method == "HEAD"
    let delivery = context.plan!.delivery
    switch context.plan!.body {
    case .empty:
        return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .literal(let bytes) where delivery.isPlain || isHead:
        return bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .content(.file(let file), let offset, let length) where delivery.isPlain && !isHead:
        if length == 0 { return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT) }
        // Small bodies do not get here: `queue` reads them into the connection's buffer. libmicrohttpd owns and
        // closes the duplicate and sends it with sendfile. Sharing the description is safe: libmicrohttpd passes
        // explicit offsets to sendfile and pread and never moves the file offset.
        let fd = fcntl(file.descriptor, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { return nil }
        return MHD_create_response_from_fd_at_offset64(length, fd, offset)
    default:
        let plan = context.plan!
        let reader = BodyReader(plan: plan, context: context, connection: connection, daemon: daemon)
        let size = plan.delivery.chunked ? cmhd_size_unknown() : plan.body.length
        return MHD_create_response_from_callback(
            size, readerBlockSize(plan), readBody, Unmanaged.passRetained(reader).toOpaque(), freeBody
        )
    }
}

/// The content reader's block: what one reader call may produce and one send may carry.
///
/// Unfaulted bodies get up to 1 MiB: every block costs a reader call, a send and an event-loop pass, and at
/// 64 KiB those made a generated body cost three times a sendfile one in CPU per byte. libmicrohttpd allocates
/// the block with the response, so it never exceeds the body. Paced and faulted bodies keep 64 KiB: pacing
/// and the fault points cut blocks short anyway, and `bodyBytesSent` for a client that leaves mid-body is
/// counted in blocks, so it stays as fine as it was.
private func readerBlockSize(_ plan: ResponsePlan) -> Int {
    guard plan.delivery.isPlain else { return 64 * 1024 }
    return Int(clamping: max(4 * 1024, min(plan.body.length, 1024 * 1024)))
}

extension MicroHTTPDaemon {
    /// Each connection's libmicrohttpd memory pool by default: the request line and headers must fit in it, with
    /// the response header behind them. libmicrohttpd zeroes the whole pool before every keep-alive request, and
    /// the unused half of the read buffer once the request is in, so its size is a per-request cost: about one and
    /// a half pools of `memset` per request. At 44 KiB (which a 40 KB `Range` header of 10,000 specs needs) that
    /// was 2-4 µs of the 21 µs a small Range request cost; 16 KiB takes request headers of up to about 15 KB
    /// (nginx's default limit for one header line is 8 KB) and made such a request 8-17% cheaper in CPU.
    static let defaultConnectionMemory = 16 * 1024

    /// The pool sizes accepted: below 8 KiB ordinary requests stop fitting; above 16 MiB a few thousand
    /// connections would exhaust memory.
    static let connectionMemoryRange = (8 * 1024)...(16 * 1024 * 1024)
}

/// File bodies up to this size are read into the response at once: one pread, and libmicrohttpd sends the
/// header and body in one write, where sendfile costs a duplicate descriptor and separate header and body
/// writes.
private let smallBodyLimit: UInt64 = 64 * 1024

private let readBody: @convention(c) (UnsafeMutableRawPointer?, UInt64, UnsafeMutablePointer<CChar>?, Int) -> Int = {
    pointer, position, buffer, capacity in
    let reader = Unmanaged<BodyReader>.fromOpaque(pointer!).takeUnretainedValue()
    return reader.read(position: position, into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
}

private let freeBody: @convention(c) (UnsafeMutableRawPointer?) -> Void = { pointer in
    guard let pointer else { return }
    Unmanaged<BodyReader>.fromOpaque(pointer).release()
}

/// Bytes a paced body sends per wake-up: a twentieth of a second's worth at high rates, and at low rates up to
/// 16 KiB but never more than a tenth of a second's worth.
///
/// Each wake-up costs a suspend, a resume and a pass of the event loop, so 3 KiB slices at 64 KiB/s (the old
/// rate / 20) made 20 wake-ups a second per connection; a tenth of a second halves that, and still keeps any
/// 2-second window within 5% of the rate (at most one slice early).
func paceQuantum(rate: UInt64) -> UInt64 {
    max(1, rate / 20, min(16 * 1024, rate / 10))
}

/// Produces a body for libmicrohttpd's content-reader callback and applies the delivery faults.
private final class BodyReader: @unchecked Sendable {
    private let body: ResponseBody
    private let delivery: Delivery
    private let context: RequestContext
    private let connection: OpaquePointer
    private unowned let daemon: MicroHTTPDaemon
    private var stalled = false
    private var paceStart: ContinuousClock.Instant?
    /// The body position at which pacing started (after a stall, pacing starts afresh).
    private var paceOrigin: UInt64 = 0

    init(plan: ResponsePlan, context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) {
        self.body = plan.body
        self.delivery = plan.delivery
        self.context = context
        self.connection = connection
        self.daemon = daemon
    }

    func read(position: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        // libmicrohttpd asks for `position` only once every byte before it has been written to the socket,
        // so this, not what the previous call handed over (up to a block more), is what has been sent.
        context.bodyBytesSent = position
        if daemon.isStopping { return end(.stalled) }
        let length = body.length
        if position >= length { return cmhd_reader_end_of_stream() }
        var allowed = UInt64(buffer.count)
        allowed = min(allowed, length - position)

        if let stallAfter = delivery.stallAfter, !stalled {
            if position >= stallAfter {
                stalled = true
                paceStart = nil
                if daemon.suspend(connection, for: delivery.stallFor) { return 0 }
                return end(.stalled)
            }
            allowed = min(allowed, stallAfter - position)
        }
        if let dropAfter = delivery.dropAfter {
            if position >= dropAfter { return end(.dropped) }
            allowed = min(allowed, dropAfter - position)
        }
        if let resetAfter = delivery.resetAfter {
            if position >= resetAfter { return reset() }
            allowed = min(allowed, resetAfter - position)
        }
        if let rate = delivery.rate, rate > 0 {
            let now = ContinuousClock.now
            let start: ContinuousClock.Instant
            if let paceStart {
                start = paceStart
            } else {
                start = now
                paceStart = now
                paceOrigin = position
            }
            // Bytes are due on a straight line from the pace origin, so rounding never accumulates.
            let sentSinceStart = position - paceOrigin
            let due =
                start + .nanoseconds(Int64(clamping: sentSinceStart.multipliedFullWidth(by: 1_000_000_000).low / rate))
            if due > now + .milliseconds(1) {
                if daemon.suspend(connection, for: due - now) { return 0 }
                return end(.stalled)
            }
            allowed = min(allowed, paceQuantum(rate: rate))
        }
        let count = Int(allowed)
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        guard fill(target, position: position) else { return end(.dropped) }
        return count
    }

    private func end(_ outcome: JournalOutcome) -> Int {
        context.outcome = outcome
        return cmhd_reader_end_with_error()
    }

    /// Ends the connection with a TCP RST once the bytes already written have left, so the peer sees
    /// exactly `reset-after` bytes and then the reset.
    private func reset() -> Int {
        let fd = cmhd_connection_fd(connection)
        if fd >= 0 {
            let deadline = ContinuousClock.now + .seconds(2)
            while cmhd_unsent_bytes(fd) > 0 && ContinuousClock.now < deadline {
                usleep(1000)
            }
            _ = cmhd_abort_with_reset(fd)
        }
        return end(.reset)
    }

    private func fill(_ target: UnsafeMutableRawBufferPointer, position: UInt64) -> Bool {
        switch body {
        case .empty:
            return target.isEmpty
        case .literal(let bytes):
            let start = Int(position)
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<start + target.count]))
            }
            return true
        case .content(let source, let offset, _):
            return copy(from: source, offset: offset + position, into: target)
        case .multipart(let multipart, let source):
            var written = 0
            var segmentStart: UInt64 = 0
            for segment in multipart.segments {
                let segmentLength = segment.byteCount
                let segmentEnd = segmentStart + segmentLength
                let cursor = position + UInt64(written)
                if cursor < segmentEnd && written < target.count {
                    let inner = cursor - segmentStart
                    let count = Int(min(UInt64(target.count - written), segmentEnd - cursor))
                    let slice = UnsafeMutableRawBufferPointer(rebasing: target[written..<written + count])
                    switch segment {
                    case .literal(let bytes):
                        bytes.withUnsafeBytes { source in
                            slice.copyMemory(
                                from: UnsafeRawBufferPointer(rebasing: source[Int(inner)..<Int(inner) + count]))
                        }
                    case .payload(let range):
                        guard copy(from: source, offset: range.lowerBound + inner, into: slice) else { return false }
                    }
                    written += count
                }
                segmentStart = segmentEnd
                if written == target.count { break }
            }
            return written == target.count
        }
    }

    private func copy(from source: ContentSource, offset: UInt64, into target: UnsafeMutableRawBufferPointer) -> Bool {
        switch source {
        case .generated(let generator):
            generator.fill(target, offset: offset)
            return true
        case .file(let file):
            return file.read(offset: offset, into: target)
        }
    }
}

extension MultipartByteranges.Segment {
    /// How many body bytes this segment contributes.
    fileprivate var byteCount: UInt64 {
        switch self {
        case .literal(let bytes): UInt64(bytes.count)
        case .payload(let range): range.upperBound - range.lowerBound + 1
        }
    }
}
