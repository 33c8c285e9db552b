import CMicroHTTPD
import NIOConcurrencyHelpers
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The only type that talks to libmicrohttpd.
///
/// It turns raw connections into `IncomingRequest` values, asks `handler` for a `ResponsePlan`, and carries
/// the plan out: sendfile for plain file bodies, a content reader for everything that is generated, paced
/// or faulted. Waits (delay, stall, rate) suspend the connection and resume it from `ConnectionWaker`, so a
/// stalled connection holds no thread.
final class MicroHTTPDaemon: @unchecked Sendable {
    typealias Handler = @Sendable (IncomingRequest) -> ResponsePlan
    typealias Completion = @Sendable (CompletedExchange) -> Void
    /// How many body bytes of a request to `target` to keep (0: read and discard them all).
    typealias BodyLimit = @Sendable (_ target: String) -> Int
    /// Numbers a scenario request as its headers arrive: given the method, the target and a function that takes the
    /// next arrival number, returns that number and the scenario attempt counted with it, if any (see
    /// `Router.admit(method:target:takeArrival:)`).
    typealias Admission =
        @Sendable (
            _ method: String, _ target: String, _ connection: any ExchangeConnection, _ takeArrival: () -> Int
        ) -> (
            arrival: Int, attempt: Int?, exchange: OpenExchange?
        )

    /// The bound port (the real one when 0 was asked for).
    let port: Int
    /// Whether the listening socket is IPv6.
    let isIPv6: Bool

    /// Whether the daemon speaks TLS: its requests are journalled with `tls: true`.
    let isTLS: Bool

    let handler: Handler
    let completion: Completion
    /// Nil when no target keeps its body (no custom routes).
    let bodyLimit: BodyLimit?
    let admission: Admission?
    /// Where requests count as open until their entries are stored; nil counts none.
    let openExchanges: OpenExchanges?
    /// Connection and arrival numbers, shared by every daemon of one server so both stay unique across its ports.
    let counters: DaemonCounters
    let suspensions: NIOLockedValueBox<SuspensionTable>
    /// Wakes connections whose waits are over; one thread for all of them.
    private let waker: ConnectionWaker
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
    ///   - bodyLimit: how much of a request's body to keep, by target; nil discards every body.
    ///   - admission: numbers `/scenario/` requests as they arrive; nil numbers them like every other request.
    ///   - openExchanges: where requests count as open from their headers' arrival until their entries are stored.
    ///   - counters: the connection and arrival numbers to draw from (shared with the server's other daemons).
    ///   - tls: the certificate and key to serve TLS with; nil serves plain HTTP.
    init(
        host: String, port: Int, threads: Int, connectionLimit: Int, connectionTimeout: Int, connectionMemory: Int,
        handler: @escaping Handler, bodyLimit: BodyLimit? = nil, completion: @escaping Completion,
        admission: Admission? = nil, openExchanges: OpenExchanges? = nil,
        counters: DaemonCounters = DaemonCounters(), tls: TLSIdentity? = nil
    ) throws {
        self.openExchanges = openExchanges
        self.isTLS = tls != nil
        self.counters = counters
        self.handler = handler
        self.bodyLimit = bodyLimit
        self.completion = completion
        self.admission = admission
        let suspensions = NIOLockedValueBox(SuspensionTable())
        self.suspensions = suspensions
        waker = ConnectionWaker { due in
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
                waker.stop()
                throw RangeServerError.bindFailed("invalid host '\(host)': not a numeric IPv4 or IPv6 address")
            }
            let reason = String(cString: strerror(error))
            waker.stop()
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
        if tls != nil { flags |= MHD_USE_TLS.rawValue }

        let context = Unmanaged.passUnretained(self).toOpaque()
        // libmicrohttpd hands the PEM text to GnuTLS while it starts and keeps no pointer to it afterwards.
        daemon = withOptionalCString(tls?.privateKeyPEM) { key in
            withOptionalCString(tls?.certificateChainPEM) { certificate in
                cmhd_start_daemon(
                    flags, fd, UInt32(max(1, threads)), UInt32(max(1, connectionLimit)),
                    UInt32(max(0, connectionTimeout)), connectionMemory, key, certificate,
                    accessHandler, context,
                    requestCompleted, context,
                    connectionNotify, context,
                    uriLogged, context
                )
            }
        }
        guard daemon != nil else {
            waker.stop()
            close(fd)
            let what = tls == nil ? "" : " with TLS (check that the key belongs to the certificate)"
            throw RangeServerError.daemonStartFailed("libmicrohttpd refused to start on \(host):\(port)\(what)")
        }
    }

    /// Stops the daemon: ends stalled and paced responses, closes every connection, joins the threads.
    func stop() {
        guard let daemon else { return }
        self.daemon = nil
        waker.stop()
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
    func suspend(_ connection: OpaquePointer) -> UInt64? {
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
    func resume(_ token: UInt64) {
        suspensions.withLockedValue { table in
            if let connection = table.pending.removeValue(forKey: token) {
                MHD_resume_connection(connection.pointer)
            }
        }
    }

    /// Suspends `connection` and resumes it after `duration`. Must be called from a libmicrohttpd callback.
    ///
    /// - Returns: false when the daemon is stopping and the caller must end the response instead.
    func suspend(_ connection: OpaquePointer, for duration: Duration) -> Bool {
        guard let token = suspend(connection) else { return false }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000
        waker.schedule(token, after: UInt64(clamping: total))
        return true
    }

    var isStopping: Bool { suspensions.withLockedValue { $0.stopping } }

    /// Makes libmicrohttpd visit `connection` again on its next pass. A content reader calls this just before it
    /// ends the body with an error (which closes the connection). Must be called from a libmicrohttpd callback.
    ///
    /// libmicrohttpd 0.9.75 closes such a connection there and then, but when the reader was asked for a body that was
    /// not ready (the first bytes, and every read after a wait) it frees the connection, and closes its socket, only
    /// when it next visits it: on an event on its socket, or in its sweep for idle connections, which stops at the
    /// first live connection older than this one (`MHD_connection_handle_idle`, `MHD_epoll`). A body that waited
    /// suspended (a drop watching the client, a stall, pacing) is resumed outside the epoll set, and its client may
    /// have closed meanwhile, so no event comes: the socket stayed open until every older connection of its thread had
    /// gone and something woke the thread, at the latest the idle timeout (a socket left over after `scripts/soak`
    /// in about one run of four). A connection suspended and resumed at once is on the list of those to handle on the
    /// next pass, which finds it closed and frees it. When the daemon is stopping this does nothing: stopping frees
    /// every connection.
    func revisit(_ connection: OpaquePointer) {
        guard let token = suspend(connection) else { return }
        resume(token)
    }

    /// The longest a response waiting on a fault (a stall, a delay) stays suspended before it looks at its socket:
    /// libmicrohttpd does not watch a suspended connection, so without a look a client that gave up on a 30-second
    /// stall would keep its request open, and its run unsettled, for 30 seconds.
    static let watchInterval: Duration = .milliseconds(200)

    /// Whether the client has closed (or reset) the connection. Must be called from a libmicrohttpd callback.
    func peerHasClosed(_ connection: OpaquePointer) -> Bool {
        cmhd_peer_closed(cmhd_connection_fd(connection)) == 1
    }
}

/// Connection and arrival numbers drawn by the daemons of one server.
final class DaemonCounters: Sendable {
    let connections = Atomic<Int>(0)
    let arrivals = Atomic<Int>(0)
}

/// Calls `body` with `text` as a C string, or with nil.
private func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// Connections waiting on the waker, so `stop()` can wake them.
struct SuspensionTable {
    var stopping = false
    var nextToken: UInt64 = 0
    var pending: [UInt64: ConnectionHandle] = [:]
}

/// A libmicrohttpd connection pointer that may cross to the waker's thread; only `MHD_resume_connection`,
/// which is thread-safe, is called on it there.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
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
