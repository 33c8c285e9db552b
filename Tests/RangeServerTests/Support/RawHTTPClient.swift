import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A deliberately independent HTTP/1.1 client over a blocking socket, for byte-exact checks: malformed
/// requests, exact body counts, and telling a TCP reset from a clean close.
///
/// Every read has a timeout, so a server bug fails a test instead of hanging it.
final class RawHTTPConnection {
    /// How a response ended.
    enum Ending: Equatable {
        /// The body was complete (Content-Length reached, last chunk seen, or no body).
        case complete
        /// The peer closed cleanly (FIN) before the body was complete.
        case closed
        /// The peer reset the connection (RST).
        case reset
        /// Nothing arrived for the read timeout.
        case timedOut
    }

    /// One parsed response.
    struct Response {
        var status: Int
        var reason: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var ending: Ending

        /// The first value of `name` (case-insensitive).
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// All header names, lower-cased.
        var headerNames: Set<String> { Set(headers.map { $0.name.lowercased() }) }
    }

    let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host:port` (IPv4), with `timeout` seconds for every read. Without a `timeout`, 30 s stretched by
    /// the time scale: a deadline for an answer that should come. A `timeout` given is the test's own and taken as it
    /// is (a garbage request the server may neither answer nor close): such reads often block a thread of the
    /// cooperative pool, and a stretched one would hold it ten times longer.
    init(host: String = "127.0.0.1", port: Int, timeout: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError("socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        var tv = timeval(tv_sec: timeout ?? scaled(seconds: 30), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // `deinit` closes the descriptor when this throws (every stored property is set by then); closing it here too
        // closed, now and then, a socket another test had just been given the number for.
        guard result == 0 else { throw RawHTTPError("connect to \(host):\(port) failed: errno \(errno)") }
    }

    deinit { close(fd) }

    /// Sends raw bytes as they are.
    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Sends raw bytes as they are.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw RawHTTPError("send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Sends a request with the given method, target and extra header lines (`Host: 127.0.0.1` unless they name
    /// another).
    func request(
        _ method: String = "GET", _ target: String, headers: [String: String] = [:], close: Bool = false
    ) throws {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        if !headers.keys.contains(where: { $0.lowercased() == "host" }) { text += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        if close { text += "Connection: close\r\n" }
        text += "\r\n"
        try send(text)
    }

    /// Reads one response; `isHead` means no body follows whatever the headers say.
    func readResponse(isHead: Bool = false, bodyLimit: Int = 1 << 31) throws -> Response {
        var headerEnd: Int?
        while headerEnd == nil {
            if let index = find([13, 10, 13, 10]) {
                headerEnd = index
                break
            }
            switch fill() {
            case .complete: continue
            case let ending: throw RawHTTPError("connection ended before the headers: \(ending)")
            }
        }
        let head = String(decoding: buffer[..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RawHTTPError("bad status line: \(head.prefix(80))")
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces())
        }
        var response = Response(
            status: status, reason: statusLine.count > 2 ? String(statusLine[2]) : "", headers: headers, body: [],
            ending: .complete
        )
        if isHead || status == 304 || status == 204 || (100..<200).contains(status) { return response }
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            try readChunked(into: &response)
        } else if let length = response.header("content-length").flatMap(Int.init) {
            while buffer.count < min(length, bodyLimit) {
                let ending = fill()
                if ending != .complete {
                    response.ending = ending
                    break
                }
            }
            let count = min(buffer.count, length)
            response.body = Array(buffer[..<count])
            buffer.removeFirst(count)
        } else {
            while true {
                let ending = fill()
                if ending != .complete {
                    response.ending = ending == .closed ? .complete : ending
                    break
                }
            }
            response.body = buffer
            buffer.removeAll()
        }
        return response
    }

    /// Reads up to the end of the next response head and returns its status, leaving the body unread: for a
    /// response that is still being sent (stalled or paced) while the test goes on.
    func readStatus() throws -> Int {
        var dummy = Response(status: 0, reason: "", headers: [], body: [], ending: .complete)
        guard let end = try waitFor([13, 10, 13, 10], response: &dummy) else {
            throw RawHTTPError("connection ended before the headers: \(dummy.ending)")
        }
        let statusLine = String(decoding: buffer[..<end], as: UTF8.self).prefix { $0 != "\r" }
        buffer.removeFirst(end + 4)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw RawHTTPError("bad status line: \(statusLine)") }
        return status
    }

    /// Reads every byte until the peer closes, resets or falls silent, without interpreting any: for checks of the
    /// framing itself.
    ///
    /// - Parameter limit: stop once this many bytes are in (the ending is then `.complete`).
    /// - Returns: the bytes (headers included) and how the connection ended.
    func readToEnd(limit: Int = .max) -> (bytes: [UInt8], ending: Ending) {
        while true {
            if buffer.count >= limit {
                let bytes = buffer
                buffer.removeAll()
                return (bytes, .complete)
            }
            let ending = fill()
            if ending != .complete {
                let bytes = buffer
                buffer.removeAll()
                return (bytes, ending)
            }
        }
    }

    private func readChunked(into response: inout Response) throws {
        while true {
            guard let lineEnd = try waitFor([13, 10], response: &response) else { return }
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            buffer.removeFirst(lineEnd + 2)
            guard let size = Int(sizeText.trimmingSpaces(), radix: 16) else {
                throw RawHTTPError("bad chunk size line '\(sizeText)'")
            }
            if size == 0 {
                // Trailer fields (none expected) and the empty line that ends the message, so that a next response
                // on the connection starts at its status line.
                while let end = try waitFor([13, 10], response: &response) {
                    buffer.removeFirst(end + 2)
                    if end == 0 { break }
                }
                return
            }
            while buffer.count < size + 2 {
                let ending = fill()
                if ending != .complete {
                    response.body += buffer.prefix(size)
                    response.ending = ending
                    return
                }
            }
            response.body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    private func waitFor(_ pattern: [UInt8], response: inout Response) throws -> Int? {
        while true {
            if let index = find(pattern) { return index }
            let ending = fill()
            if ending != .complete {
                response.ending = ending
                return nil
            }
        }
    }

    /// Reads once into the buffer; `.complete` means bytes arrived.
    private func fill() -> Ending {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if count > 0 {
            buffer += chunk[..<count]
            return .complete
        }
        if count == 0 { return .closed }
        switch errno {
        case ECONNRESET: return .reset
        case EAGAIN, EWOULDBLOCK: return .timedOut
        case EINTR: return fill()
        default: return .closed
        }
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        var index = 0
        while index <= buffer.count - pattern.count {
            if buffer[index] == pattern[0] && Array(buffer[index..<index + pattern.count]) == pattern { return index }
            index += 1
        }
        return nil
    }
}

/// A failure of the raw client itself (not of the server under test).
struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}

/// One request on a fresh connection, closed afterwards.
func rawRequest(
    port: Int, _ method: String = "GET", _ target: String, headers: [String: String] = [:]
) throws -> RawHTTPConnection.Response {
    let connection = try RawHTTPConnection(port: port)
    try connection.request(method, target, headers: headers, close: true)
    return try connection.readResponse(isHead: method == "HEAD")
}

/// The IPv4 port of the socket `fd` (its own, or its peer's), or nil.
func socketPort(_ fd: Int32, peer: Bool) -> Int? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let ok = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            (peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)) == 0
        }
    }
    guard ok, storage.ss_family == sa_family_t(AF_INET) else { return nil }
    return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
    }
}
