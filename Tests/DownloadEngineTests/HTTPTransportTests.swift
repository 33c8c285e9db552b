import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

#if canImport(Glibc)
import Glibc
#endif

// MARK: Transport against a scripted server

/// A loopback TCP server whose connections follow a script: `handle(index, fd)` runs on a thread of its own for
/// the `index`-th accepted connection, and the connection is closed when it returns.
private final class ScriptedServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var accepted = 0
    private var requestsSeen = 0
    private var heads: [String] = []
    private var endings: [String] = []

    init(ipv6: Bool = false, _ handle: @escaping @Sendable (Int, Int32, ScriptedServer) -> Void) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
            guard bound == 0 else {
                close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        listen(fd, 64)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        self.listener = fd
        self.port = port
        // The accept thread owns the listening descriptor and closes it once `stop()` has shut it down: closed by
        // `stop()` instead, its number could go to another test's listener before this thread's next accept, which
        // would then take that test's connections.
        let thread = Thread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    close(fd)
                    return
                }
                let index = lock.withLock {
                    accepted += 1
                    return accepted - 1
                }
                Thread {
                    handle(index, connection, self)
                    close(connection)
                }.start()
            }
        }
        thread.start()
    }

    var connections: Int { lock.withLock { accepted } }
    var requests: Int { lock.withLock { requestsSeen } }
    /// How each connection that ended while a request was awaited ended, in order.
    var ends: [String] { lock.withLock { endings } }
    /// Every request head read, in order.
    var requestHeads: [String] { lock.withLock { heads } }

    /// Reads one request head from `fd`; `false` at the end of the connection.
    func readRequest(_ fd: Int32) -> Bool {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !(received.count >= 4 && received.suffix(4) == Array("\r\n\r\n".utf8)) {
            let got = recv(fd, &byte, 1, 0)
            guard got == 1 else {
                // Why the connection ended, for a failing test to print (see `ends`).
                let reason =
                    got == 0
                    ? "end of stream, socket state \(Self.tcpState(fd))"
                    : "recv failed: \(String(cString: strerror(errno)))"
                lock.withLock { endings.append("descriptor \(fd) after \(received.count) bytes: \(reason)") }
                return false
            }
            received.append(byte)
        }
        lock.withLock {
            requestsSeen += 1
            heads.append(String(decoding: received, as: UTF8.self))
        }
        return true
    }

    /// The kernel's TCP state of `fd`, by name: at the end of stream, `CLOSE_WAIT` says the client closed first;
    /// `FIN_WAIT2`, `CLOSING` or `TIME_WAIT` would say this end had already sent its FIN, which this server never does
    /// while it waits for a request (something else shut the descriptor down).
    static func tcpState(_ fd: Int32) -> String {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else {
            return "unknown (\(String(cString: strerror(errno))))"
        }
        let names = [
            1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2", 6: "TIME_WAIT", 7: "CLOSE",
            8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING",
        ]
        return names[Int(info.tcpi_state)] ?? "\(info.tcpi_state)"
    }

    func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    func write(_ fd: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            done += n
        }
    }

    /// Wakes the accept thread, which then closes the listener.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }
}

/// Collects a body; can decline after `limit` bytes.
private final class CollectingSink: BodySink, @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private let onPart: @Sendable (Int) -> Void
    init(onPart: @escaping @Sendable (Int) -> Void = { _ in }) { self.onPart = onPart }
    var received: [UInt8] { lock.withLock { bytes } }
    func consume(_ part: ByteBuffer) throws -> Bool {
        let total = lock.withLock {
            bytes += Array(part.readableBytesView)
            return bytes.count
        }
        onPart(total)
        return true
    }
}

/// A transport for these tests (AsyncHTTPClient's per-host limit is a soft one: it does not stop a second connection
/// when a request finds none idle, see ``get(_:_:)``; with a limit of 1, ThreadSanitizer runs saw more connections).
///
/// AsyncHTTPClient logs into `log` at trace level: a test that counts connections prints it when the count is wrong, so
/// a failure under a sanitizer's load says which connection the pool opened, closed or released, and when.
private func transport(connectionsPerHost: Int = 4, log: NIOLockedValueBox<[String]>? = nil) throws -> HTTPTransport {
    var configuration = TransportConfiguration(
        connectTimeout: scaled(.seconds(5)), connectionsPerHost: connectionsPerHost)
    // The tests count connections, so the pool must not close an idle one behind their backs. Its 60-second idle
    // timeout did, under AddressSanitizer with every suite running at once: a test's task waited over a minute for a
    // thread of the starved cooperative pool between two requests, and the second found its connection closed
    // ("close connection" from the pool, before the channel went inactive, in the pool's log).
    configuration.idleConnectionTimeout = .seconds(3600)
    if let log {
        var logger = Logger(label: "HTTPTransportTests") { _ in CapturingLogHandler(log) }
        logger.logLevel = .trace
        configuration.logger = logger
    }
    return try HTTPTransport(configuration: configuration)
}

/// AsyncHTTPClient's log, for an expectation's comment.
private func poolLog(
    _ log: NIOLockedValueBox<[String]>, _ server: ScriptedServer? = nil, _ what: String = ""
) -> Comment {
    let ends = server.map { "\nThe server's connections ended: " + $0.ends.joined(separator: "; ") } ?? ""
    return Comment(
        rawValue: what + ends + "\nAsyncHTTPClient's log:\n" + log.withLockedValue { $0.joined(separator: "\n") })
}

private func get(_ transport: HTTPTransport, _ url: String) async throws -> (Int, [UInt8]) {
    let response = try await transport.execute(TransportRequest(url: url, headers: [("Accept-Encoding", "identity")]))
    let sink = CollectingSink()
    try await response.body.drain(into: sink)
    // The body's end reaches this task before AsyncHTTPClient's event loop has put the connection back in its pool; a
    // request sent in between opens a second connection (the per-host limit is a soft one). The tests count
    // connections, so the next request waits a moment, stretched by the time scale: 50 ms lost this race under
    // AddressSanitizer on a loaded machine (200 ms with its scale), no pause at all under ThreadSanitizer.
    try await Task.sleep(for: scaled(.milliseconds(100)))
    return (response.status, sink.received)
}

/// The client-side sockets of this process connected to `port` (their peer's port is `port`).
private func socketsConnected(to port: Int) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var count = 0
    for name in names {
        guard let fd = Int32(name) else { continue }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard ok, storage.ss_family == sa_family_t(AF_INET) else { continue }
        let peerPort = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        if peerPort == port { count += 1 }
    }
    return count
}

@Suite("HTTP transport")
struct HTTPTransportTests {
    @Test("a kept-alive connection the server closes before answering fails that request; the next gets a new one")
    func staleConnectionReported() async throws {
        let server = try ScriptedServer { index, fd, server in
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            // The first connection reads the second request and closes without a word, as a server does whose
            // idle timeout fired just as the request arrived.
            if index == 0 {
                _ = server.readRequest(fd)
                return
            }
            while server.readRequest(fd) { server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none") }
        }
        defer { server.stop() }
        let log = NIOLockedValueBox<[String]>([])
        let client = try transport(log: log)
        let first = try await get(client, "http://127.0.0.1:\(server.port)/a")
        #expect(first.0 == 200 && first.1 == Array("one".utf8))
        // AsyncHTTPClient does not send it again by itself; the engine's retry policy does (and counts it).
        do {
            _ = try await get(client, "http://127.0.0.1:\(server.port)/b")
            Issue.record(poolLog(log, server, "no error: the request went out on a new connection"))
        } catch let error as DownloadError {
            #expect(error.kind == "network" && error.message.contains("closed"))
        }
        let third = try await get(client, "http://127.0.0.1:\(server.port)/c")
        #expect(third.0 == 200 && third.1 == Array("one".utf8))
        #expect(server.connections == 2, poolLog(log, server))
        #expect(server.requests == 3)
        await client.shutdown()
    }

    @Test("keep-alive reuses one connection; Connection: close is honoured")
    func keepAliveAndClose() async throws {
        let server = try ScriptedServer { index, fd, server in
            while server.readRequest(fd) {
                // The second connection says close after its first response.
                if index == 0 {
                    server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                } else {
                    server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    return
                }
            }
        }
        defer { server.stop() }
        let log = NIOLockedValueBox<[String]>([])
        let client = try transport(log: log)
        for _ in 0..<3 { _ = try await get(client, "http://127.0.0.1:\(server.port)/") }
        #expect(server.connections == 1, poolLog(log, server))
        #expect(socketsConnected(to: server.port) == 1, poolLog(log, server))
        await client.shutdown()

        let closing = try ScriptedServer { _, fd, server in
            while server.readRequest(fd) {
                server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            }
        }
        defer { closing.stop() }
        let other = try transport()
        for _ in 0..<3 {
            let (status, body) = try await get(other, "http://127.0.0.1:\(closing.port)/")
            #expect(status == 200 && body == Array("ok".utf8))
        }
        #expect(closing.connections == 3)
        try await eventually(.seconds(10), "the closed connections to be released") {
            socketsConnected(to: closing.port) == 0
        }
        await other.shutdown()
    }

    @Test("chunked and close-delimited bodies arrive whole")
    func framings() async throws {
        let body = (0..<100_000).map { UInt8($0 % 251) }
        let server = try ScriptedServer { _, fd, server in
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for start in stride(from: 0, to: body.count, by: 7000) {
                let chunk = body[start..<min(start + 7000, body.count)]
                server.write(fd, String(chunk.count, radix: 16) + ";ext\r\n")
                server.write(fd, Array(chunk) + Array("\r\n".utf8))
            }
            server.write(fd, "0\r\nX-Trailer: yes\r\n\r\n")
            // The same connection, kept alive, then carries a body delimited by its end.
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.0 200 OK\r\n\r\n")
            server.write(fd, body)
        }
        defer { server.stop() }
        let log = NIOLockedValueBox<[String]>([])
        let client = try transport(log: log)
        let chunked = try await get(client, "http://127.0.0.1:\(server.port)/chunked")
        #expect(chunked.1 == body)
        let closeDelimited = try await get(client, "http://127.0.0.1:\(server.port)/close")
        #expect(closeDelimited.1 == body)
        #expect(server.connections == 1, poolLog(log, server))
        try await eventually(.seconds(10), "the close-delimited connection to be released") {
            socketsConnected(to: server.port) == 0
        }
        await client.shutdown()
    }

    @Test("parts before a drop are delivered, then the error")
    func dropMidBody() async throws {
        let server = try ScriptedServer { _, fd, server in
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n")
            server.write(fd, [UInt8](repeating: 7, count: 1200))
        }
        defer { server.stop() }
        let client = try transport()
        let response = try await client.execute(TransportRequest(url: "http://127.0.0.1:\(server.port)/", headers: []))
        let sink = CollectingSink()
        await #expect(throws: DownloadError.self) { try await response.body.drain(into: sink) }
        #expect(sink.received.count == 1200)
        await client.shutdown()
    }

    @Test("a malformed head is a malformed-response error naming it; a refused connect is connect-failed")
    func malformedAndRefused() async throws {
        let server = try ScriptedServer { _, fd, server in
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 OK 200\r\n\r\n")
        }
        let client = try transport()
        do {
            _ = try await get(client, "http://127.0.0.1:\(server.port)/")
            Issue.record("no error")
        } catch let error as DownloadError {
            #expect(error.kind == "malformed-response" && error.message.contains("malformed"))
            #expect(error.isRetryable)
        }
        let port = server.port
        server.stop()
        do {
            _ = try await get(client, "http://127.0.0.1:\(port)/")
            Issue.record("no error")
        } catch let error as DownloadError {
            #expect(error.kind == "connect-failed", "\(error.kind): \(error.message)")
            #expect(error.message.contains("connect"))
            #expect(error.isConnectFailure && error.isRetryable)
        }
        await client.shutdown()
    }

    /// A server that promises a 100 MB body, sends `count` bytes of it, then only waits to see the client close.
    ///
    /// - Returns: The server, and whether it has seen the connection closed.
    fileprivate static func stalledBodyServer(sending count: Int) throws -> (ScriptedServer, @Sendable () -> Bool) {
        let closed = NIOLockedValueBox(false)
        let server = try ScriptedServer { _, fd, server in
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
            server.write(fd, [UInt8](repeating: 1, count: count))
            // Then nothing: only the client's cancellation or abandonment can end the exchange, and its close is seen here.
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, 0)
            closed.withLockedValue { $0 = n == 0 }
        }
        return (server, { closed.withLockedValue { $0 } })
    }

    @Test("cancelling the draining task cancels the request and closes the connection")
    func cancelMidBody() async throws {
        let (server, serverSawClose) = try Self.stalledBodyServer(sending: 100_000)
        defer { server.stop() }
        let client = try transport()
        let response = try await client.execute(TransportRequest(url: "http://127.0.0.1:\(server.port)/", headers: []))
        let started = AsyncStream<Void>.makeStream()
        let sink = CollectingSink { total in if total >= 100_000 { started.continuation.yield() } }
        let drain = Task { try await response.body.drain(into: sink) }
        for await _ in started.stream { break }
        drain.cancel()
        await #expect(throws: CancellationError.self) { try await drain.value }
        try await eventually(.seconds(10), "the server to see the connection closed") {
            serverSawClose()
        }
        await client.shutdown()
    }

    @Test("an IPv6 literal host works")
    func ipv6() async throws {
        guard
            let server = try? ScriptedServer(
                ipv6: true,
                { _, fd, server in
                    guard server.readRequest(fd) else { return }
                    server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsix!")
                })
        else { return }  // No IPv6 loopback on this machine.
        defer { server.stop() }
        let client = try transport()
        let (status, body) = try await get(client, "http://[::1]:\(server.port)/x")
        #expect(status == 200 && body == Array("six!".utf8))
        await client.shutdown()
    }

    @Test("many requests leave no socket and no thread behind after shutdown")
    func noLeaks() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let client = try transport(connectionsPerHost: 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for index in 0..<50 {
                            let (status, body) = try await get(
                                client, "\(server.baseURL)/bytes/\(1000 + worker * 100 + index)")
                            #expect(status == 200 && body.count == 1000 + worker * 100 + index)
                        }
                    }
                }
                try await group.waitForAll()
            }
            // One kept-alive connection per concurrent request at most, reused by the 50 that follow.
            #expect(socketsConnected(to: server.port) <= 4)
            await client.shutdown()
            // The event loop closes the last sockets as the shutdown completes; on a loaded machine a moment later.
            let port = server.port
            try await eventually(.seconds(5), "every socket to the server closed") { socketsConnected(to: port) == 0 }
        }
    }

    @Test("interim 1xx responses are skipped; 204 and 304 have no body; chunk extensions and trailers are accepted")
    func framingDetails() async throws {
        let server = try ScriptedServer { _, fd, server in
            guard server.readRequest(fd) else { return }
            // Written a few bytes at a time, so heads and chunks arrive split.
            let chunked = Array(
                ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n").utf8)
            for start in stride(from: 0, to: chunked.count, by: 5) {
                server.write(fd, Array(chunked[start..<min(start + 5, chunked.count)]))
            }
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 204 No Content\r\n\r\n")
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")
            guard server.readRequest(fd) else { return }
            server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
        defer { server.stop() }
        let log = NIOLockedValueBox<[String]>([])
        let client = try transport(log: log)
        let chunked = try await get(client, "http://127.0.0.1:\(server.port)/")
        #expect(chunked.0 == 200 && chunked.1 == Array("abcde".utf8))
        let noContent = try await get(client, "http://127.0.0.1:\(server.port)/")
        #expect(noContent.0 == 204 && noContent.1.isEmpty, poolLog(log, server))
        let notModified = try await get(client, "http://127.0.0.1:\(server.port)/")
        #expect(notModified.0 == 304 && notModified.1.isEmpty)
        let last = try await get(client, "http://127.0.0.1:\(server.port)/")
        #expect(last.0 == 200 && last.1 == Array("ok".utf8))
        #expect(server.connections == 1, poolLog(log, server))
        await client.shutdown()
    }

    @Test("HTTP/1.0 responses are not reused; a body cut short is an error after the bytes that came")
    func http10AndCutShort() async throws {
        let server = try ScriptedServer { index, fd, server in
            guard server.readRequest(fd) else { return }
            if index == 0 {
                server.write(fd, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
                _ = server.readRequest(fd)
            } else {
                server.write(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n8\r\nef")
            }
        }
        defer { server.stop() }
        let log = NIOLockedValueBox<[String]>([])
        let client = try transport(log: log)
        let old = try await get(client, "http://127.0.0.1:\(server.port)/")
        #expect(old.0 == 200 && old.1 == Array("ok".utf8))
        let response = try await client.execute(TransportRequest(url: "http://127.0.0.1:\(server.port)/", headers: []))
        let sink = CollectingSink()
        await #expect(throws: DownloadError.self) { try await response.body.drain(into: sink) }
        #expect(sink.received == Array("abcdef".utf8))
        #expect(server.connections == 2, poolLog(log, server))
        await client.shutdown()
    }

    @Test("a request header with a line break is refused; an unreachable proxy is named as the proxy")
    func refusedRequests() async throws {
        let client = try transport()
        await #expect(throws: DownloadError.self) {
            _ = try await client.execute(TransportRequest(url: "http://127.0.0.1:9/", headers: [("X", "a\r\nB: c")]))
        }
        await client.shutdown()
        var configuration = TransportConfiguration()
        configuration.proxy = .init(.init(host: "127.0.0.1", port: 9))
        let proxied = try HTTPTransport(configuration: configuration)
        do {
            _ = try await proxied.execute(TransportRequest(url: "http://127.0.0.1:1/", headers: []))
            Issue.record("no error")
        } catch let error as DownloadError {
            #expect(error.isConnectFailure)
            #expect(error.message.contains("proxy 127.0.0.1:9"), "\(error.message)")
        }
        await proxied.shutdown()
    }

    @Test("abandoning a body closes its connection")
    func abandonCloses() async throws {
        let (server, serverSawClose) = try Self.stalledBodyServer(sending: 1000)
        defer { server.stop() }
        let client = try transport()
        let response = try await client.execute(TransportRequest(url: "http://127.0.0.1:\(server.port)/", headers: []))
        #expect(!response.body.isComplete())
        response.body.abandon()
        try await eventually(.seconds(10), "the server to see the connection closed") {
            serverSawClose()
        }
        await client.shutdown()
    }

    @Test("the request on the wire: GET, Host, the engine's fields; user information and fragment not sent")
    func requestOnTheWire() async throws {
        let server = try ScriptedServer { _, fd, server in
            while server.readRequest(fd) { server.write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") }
        }
        defer { server.stop() }
        let client = try transport()
        _ = try await get(client, "HTTP://user:pw@127.0.0.1:\(server.port)/a/b?c=d#frag")
        _ = try await get(client, "http://127.0.0.1:\(server.port)?q")
        _ = try await get(client, "http://127.0.0.1:\(server.port)/a%20b/%2F")
        await client.shutdown()
        let heads = server.requestHeads.map { $0.split(separator: "\r\n").map(String.init) }
        #expect(heads.count == 3)
        guard heads.count == 3 else { return }
        #expect(heads[0].first == "GET /a/b?c=d HTTP/1.1")
        #expect(heads[0].contains { $0.lowercased() == "host: 127.0.0.1:\(server.port)" })
        #expect(heads[0].contains("Accept-Encoding: identity"))
        #expect(!heads[0].contains { $0.lowercased().hasPrefix("authorization") })
        #expect(heads[1].first == "GET /?q HTTP/1.1")
        // Escapes the URL already has go on the request line as they are.
        #expect(heads[2].first == "GET /a%20b/%2F HTTP/1.1")
    }

    @Test("URLs other than http and https, and trusted certificates that are not PEM, are refused with one line")
    func refusedConfiguration() async throws {
        let client = try transport()
        for url in ["ftp://example.com/", "http://", "not a url", "file:///etc/passwd"] {
            do {
                _ = try await client.execute(TransportRequest(url: url, headers: []))
                Issue.record("no error for \(url)")
            } catch let error as DownloadError {
                #expect(error.kind == "invalid-url", "\(url): \(error)")
            }
        }
        await client.shutdown()
        var configuration = TransportConfiguration()
        configuration.trust = .init(additionalCertificatesPEM: ["not a certificate"])
        #expect(throws: DownloadError.self) { _ = try HTTPTransport(configuration: configuration) }
        configuration.trust = .init(additionalCertificateFiles: ["/nonexistent/ca.pem"])
        do {
            _ = try HTTPTransport(configuration: configuration)
            Issue.record("no error for a CA file that does not exist")
        } catch let error as DownloadError {
            #expect("\(error)".contains("/nonexistent/ca.pem"), "\(error)")
        }
    }
}
