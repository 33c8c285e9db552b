import Foundation
import HTTPVocabulary
import NIOCore

/// The `http://` transport: HTTP/1.1 over blocking POSIX sockets, one ``IOThreadPool`` thread per request in
/// flight, kept-alive connections pooled per host and port.
///
/// Built for the cost of many small files: a request is a `send`, then `recv` calls into one reused buffer, the head
/// parsed by ``HTTP1ResponseDecoder`` and each body part handed to the sink as a slice of that buffer, on the
/// request's thread, before the next `recv`. AsyncHTTPClient spent more CPU in its connection and request state
/// machines than this transport spends in total. `https://` stays with ``AsyncHTTPClientTransport``
/// (see ``SchemeTransport``).
///
/// A connection taken from the pool that fails before the first byte of the response (the server closed it while
/// it was idle) is replaced by a new one and the request sent again, once: the engine only sends `GET`, which is
/// idempotent. At most `connectionsPerHost` idle connections are kept per host and port.
final class SocketTransport: Transport, @unchecked Sendable {
    private let connectTimeout: Duration
    private let idleLimit: Int
    let threads = IOThreadPool(name: "rangefetch.http")
    private let lock = NSLock()
    private var idle: [String: [Int32]] = [:]
    private var isShutDown = false

    /// The bytes read from a connection per `recv` at most (and the read buffer's size).
    static let readSize = 64 << 10

    init(connectTimeout: Duration, connectionsPerHost: Int) {
        self.connectTimeout = connectTimeout
        self.idleLimit = max(1, connectionsPerHost)
    }

    deinit {
        threads.stop()
        for fd in idle.values.joined() { SocketIO.close(fd) }
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        guard let target = HTTPTarget(request.url) else { throw DownloadError.invalidURL(request.url) }
        let exchange = SocketExchange(
            transport: self, target: target, url: request.url, request: try Self.serialize(request, target))
        let head = try await exchange.start()
        return TransportResponse(
            status: head.status, headers: head.headers,
            body: TransportBody(
                drain: { sink in try await exchange.drain(into: sink) },
                abandon: { exchange.abandon() },
                isComplete: { exchange.isComplete }
            ))
    }

    func shutdown() async {
        let fds = lock.withLock {
            isShutDown = true
            defer { idle = [:] }
            return Array(idle.values.joined())
        }
        for fd in fds { SocketIO.close(fd) }
        threads.stop()
    }

    /// The number of idle pooled connections (for tests).
    var idleConnectionCount: Int { lock.withLock { idle.values.reduce(0) { $0 + $1.count } } }

    // MARK: Connections

    /// A kept-alive connection to `target` that still looks open, if the pool has one.
    func takeIdle(_ target: HTTPTarget) -> Int32? {
        while true {
            let fd: Int32? = lock.withLock { idle[target.key]?.popLast() }
            guard let fd else { return nil }
            if SocketIO.isIdleAndOpen(fd) { return fd }
            SocketIO.close(fd)
        }
    }

    func connect(_ target: HTTPTarget, url: String, isCancelled: () -> Bool) throws -> Int32 {
        try SocketIO.connect(
            host: target.host, port: target.port, timeout: connectTimeout, url: url, isCancelled: isCancelled)
    }

    /// Takes back a connection whose response ended cleanly and which both sides allow to be reused.
    func keep(_ fd: Int32, for target: HTTPTarget) {
        let kept = lock.withLock {
            guard !isShutDown, idle[target.key, default: []].count < idleLimit else { return false }
            idle[target.key, default: []].append(fd)
            return true
        }
        if !kept { SocketIO.close(fd) }
    }

    // MARK: Requests

    /// The request's bytes: `GET`, the `Host` field, the engine's fields, nothing else.
    static func serialize(_ request: TransportRequest, _ target: HTTPTarget) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        bytes.append(contentsOf: "GET ".utf8)
        bytes.append(contentsOf: target.requestTarget.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        bytes.append(contentsOf: target.hostField.utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        for (name, value) in request.headers {
            // A line break in a field would let a configured header smuggle in fields or a second request.
            guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") }),
                !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { throw DownloadError.invalidState("invalid request header '\(name)'") }
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        return bytes
    }
}

/// The parts of an `http://` URL a request needs, parsed without Foundation's `URL` (which costs more than the
/// rest of building a request).
struct HTTPTarget: Hashable, Sendable {
    /// The host without brackets (an IPv6 literal is bare).
    var host: String
    var port: Int
    /// The `Host` field: the host as written (brackets kept) and the port unless it is 80.
    var hostField: String
    /// Path and query, `/` when the URL has no path; the fragment is not sent.
    var requestTarget: String

    /// The pool's key: connections are shared per host and port.
    var key: String { hostField }

    /// Whether `url` starts with `http://` (in any case).
    static func hasPlainScheme(_ url: String) -> Bool {
        let scheme = "http://".utf8
        return asciiCaseInsensitiveEqual(url.utf8.prefix(scheme.count), scheme)
    }

    /// Parses `http://[user@]host[:port][/path][?query][#fragment]`; `nil` for anything else.
    init?(_ url: String) {
        let bytes = Array(url.utf8)
        let scheme = Array("http://".utf8)
        guard bytes.count > scheme.count, asciiCaseInsensitiveEqual(bytes[0..<scheme.count], scheme) else {
            return nil
        }
        var index = scheme.count
        let authorityStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"),
            bytes[index] != UInt8(ascii: "#")
        {
            index += 1
        }
        var authority = bytes[authorityStart..<index]
        // User information is not sent (the engine has no credentials of its own to put in it).
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[(authority.startIndex + 1)..<close]
            let rest = authority[(close + 1)...]
            if let colon = rest.first {
                guard colon == UInt8(ascii: ":") else { return nil }
                portBytes = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[authority.startIndex..<colon]
            portBytes = authority[(colon + 1)...]
        } else {
            hostBytes = authority
        }
        guard !hostBytes.isEmpty, portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        let port = portBytes.isEmpty ? 80 : portBytes.reduce(0) { $0 * 10 + Int($1 - 48) }
        guard (1...65535).contains(port) else { return nil }
        host = String(decoding: hostBytes, as: UTF8.self)
        self.port = port
        let bracketed = host.contains(":") ? "[\(host)]" : host
        hostField = port == 80 ? bracketed : "\(bracketed):\(port)"
        var end = index
        while end < bytes.count, bytes[end] != UInt8(ascii: "#") { end += 1 }
        let path = bytes[index..<end]
        requestTarget = Self.encodedTarget(path.first == UInt8(ascii: "/") ? path : [UInt8(ascii: "/")] + path)
    }

    /// The path and query as they may go on the request line: a byte RFC 3986 does not allow there (a space, a
    /// control, a non-ASCII byte, `"<>\^`{|}`) is percent-encoded, as Foundation's `URL(string:)` does when it
    /// accepts such a URL; existing `%XX` escapes and every other byte stay as they are.
    static func encodedTarget(_ bytes: some Collection<UInt8>) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case 0...0x20, 0x7F...0xFF, UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"),
                UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"),
                UInt8(ascii: "}"):
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default:
                encoded.append(byte)
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
