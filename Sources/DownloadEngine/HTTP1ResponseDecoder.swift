import HTTPVocabulary
import NIOCore

/// Parses one HTTP/1.1 response to a `GET` from bytes as they arrive: the head, then the body as slices of the
/// input buffer (no copy), framed by `Content-Length`, chunked transfer coding or the end of the connection.
///
/// A pure state machine over a `ByteBuffer`, with no socket in sight, so that it can be fed any split of the bytes
/// in tests. ``next(_:)`` consumes what it can and returns one event, or `nil` when it needs more bytes;
/// ``endOfInput()`` says what the end of the connection means at this point. Interim `1xx` heads are skipped,
/// `204` and `304` have no body. Whatever the server sends, the result is an event or a
/// ``DownloadError/malformedResponse(_:)``, never a crash: the head is capped at ``maximumHeadSize`` bytes and a
/// chunk-size line or the trailers at the same cap.
struct HTTP1ResponseDecoder {
    /// A response head.
    struct Head: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        /// Whether the connection may carry another request once this body ended.
        var keepAlive: Bool
    }

    enum Event {
        case head(Head)
        /// The next bytes of the body: a slice of the input buffer.
        case body(ByteBuffer)
        /// The body ended; ``isReusable`` tells whether the connection may carry another request.
        case end
    }

    /// The longest response head (and chunk-size line, and trailer section) accepted.
    static let maximumHeadSize = 64 << 10

    private enum State {
        case head
        case fixed(remaining: Int64)
        case chunkSize
        case chunkData(remaining: Int64)
        case chunkDataEnd
        case trailers(bytes: Int)
        case untilClose
        case done
    }

    private var state = State.head
    /// Bytes of the head already searched for its end without finding it, so a head arriving in small pieces is
    /// not searched from its start again for every piece.
    private var headScanned = 0
    private var keepAlive = false
    /// Body bytes handed out so far (for error messages).
    private(set) var bodyBytes: Int64 = 0

    /// Whether the body ended with its framing intact and both sides allow another request on the connection.
    var isReusable: Bool {
        if case .done = state { return keepAlive }
        return false
    }

    /// Whether a final (non-1xx) head was decoded.
    var hasHead: Bool {
        if case .head = state { return false }
        return true
    }

    /// Consumes bytes from `buffer` and returns the next event, or `nil` when more bytes are needed (then all of
    /// `buffer` that could be used was consumed, or is kept there for the next call).
    ///
    /// - Parameter buffer: The received bytes not decoded yet; its reader index moves past what was used.
    /// - Returns: The next event, or `nil` when `buffer` holds too little.
    /// - Throws: ``DownloadError/malformedResponse(_:)``.
    mutating func next(_ buffer: inout ByteBuffer) throws -> Event? {
        while true {
            switch state {
            case .head:
                guard let head = try decodeHead(&buffer) else { return nil }
                if (100...199).contains(head.status) {
                    // 101 would switch protocols, which a GET from this engine never asks for.
                    if head.status == 101 {
                        throw DownloadError.malformedResponse("unexpected 101 Switching Protocols")
                    }
                    continue
                }
                return .head(head)
            case .fixed(let remaining):
                if remaining == 0 {
                    state = .done
                    return .end
                }
                guard buffer.readableBytes > 0 else { return nil }
                let count = Int(min(Int64(buffer.readableBytes), remaining))
                state = .fixed(remaining: remaining - Int64(count))
                return .body(take(count, from: &buffer))
            case .untilClose:
                guard buffer.readableBytes > 0 else { return nil }
                return .body(take(buffer.readableBytes, from: &buffer))
            case .chunkSize:
                guard let line = try readLine(&buffer, limit: Self.maximumHeadSize, what: "chunk-size line") else {
                    return nil
                }
                let size = try Self.chunkSize(line)
                state = size == 0 ? .trailers(bytes: 0) : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard buffer.readableBytes > 0 else { return nil }
                let count = Int(min(Int64(buffer.readableBytes), remaining))
                state = remaining == Int64(count) ? .chunkDataEnd : .chunkData(remaining: remaining - Int64(count))
                return .body(take(count, from: &buffer))
            case .chunkDataEnd:
                guard let line = try readLine(&buffer, limit: 2, what: "the line after a chunk's data") else {
                    return nil
                }
                guard line.isEmpty else {
                    throw DownloadError.malformedResponse("chunk data longer than its chunk size")
                }
                state = .chunkSize
            case .trailers(let bytes):
                let before = buffer.readerIndex
                let limit = Self.maximumHeadSize - bytes
                guard let line = try readLine(&buffer, limit: limit, what: "trailer section") else { return nil }
                if line.isEmpty {
                    state = .done
                    return .end
                }
                // Trailer fields are not used: a download's metadata is in its head.
                state = .trailers(bytes: bytes + buffer.readerIndex - before)
            case .done:
                return nil
            }
        }
    }

    /// What the end of the connection means now.
    ///
    /// - Returns: `.end` when the body is delimited by the connection's end (or had ended), `nil` when the body
    ///   had already ended.
    /// - Throws: ``DownloadError/network(_:)`` naming what was cut short.
    mutating func endOfInput() throws -> Event? {
        switch state {
        case .untilClose:
            state = .done
            keepAlive = false
            return .end
        case .done:
            return nil
        case .head:
            throw DownloadError.network("connection closed before a complete response head")
        case .fixed(let remaining):
            throw DownloadError.network(
                "connection closed after \(bodyBytes) of \(bodyBytes + remaining) body bytes")
        case .chunkSize, .chunkData, .chunkDataEnd, .trailers:
            throw DownloadError.network("connection closed inside a chunked body after \(bodyBytes) bytes")
        }
    }

    private mutating func take(_ count: Int, from buffer: inout ByteBuffer) -> ByteBuffer {
        bodyBytes += Int64(count)
        return buffer.readSlice(length: count)!
    }

    /// Reads one line ending in LF (a CR before it is dropped); `nil` when no LF is there yet.
    private func readLine(_ buffer: inout ByteBuffer, limit: Int, what: String) throws -> ByteBufferView? {
        let view = buffer.readableBytesView
        guard let lf = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if view.count > limit { throw DownloadError.malformedResponse("\(what) longer than \(limit) bytes") }
            return nil
        }
        if lf - view.startIndex > limit { throw DownloadError.malformedResponse("\(what) longer than \(limit) bytes") }
        var end = lf
        if end > view.startIndex, view[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = view[view.startIndex..<end]
        buffer.moveReaderIndex(forwardBy: lf + 1 - view.startIndex)
        return line
    }

    // MARK: Head

    /// Decodes a head once its blank line arrived, and sets the body's framing.
    private mutating func decodeHead(_ buffer: inout ByteBuffer) throws -> Head? {
        let view = buffer.readableBytesView
        // The head ends with an empty line: LF (CR) LF. Search from where the last call stopped, one byte back so
        // that a CR LF split across calls is found.
        var index = view.startIndex + max(0, headScanned - 3)
        var end: Int?
        while index < view.endIndex {
            if view[index] == UInt8(ascii: "\n") {
                let next = index + 1
                if next < view.endIndex, view[next] == UInt8(ascii: "\n") {
                    end = next + 1
                    break
                }
                if next + 1 < view.endIndex, view[next] == UInt8(ascii: "\r"), view[next + 1] == UInt8(ascii: "\n") {
                    end = next + 2
                    break
                }
            }
            index += 1
        }
        guard let end else {
            if view.count > Self.maximumHeadSize {
                throw DownloadError.malformedResponse("response head longer than \(Self.maximumHeadSize) bytes")
            }
            headScanned = view.count
            return nil
        }
        if end - view.startIndex > Self.maximumHeadSize {
            throw DownloadError.malformedResponse("response head longer than \(Self.maximumHeadSize) bytes")
        }
        headScanned = 0
        let head = try Self.parseHead(view[view.startIndex..<end])
        buffer.moveReaderIndex(forwardBy: end - view.startIndex)
        if !(100...199).contains(head.head.status) { try frame(head) }
        return head.head
    }

    private mutating func frame(_ parsed: (head: Head, chunked: Bool, transferEncoded: Bool, length: Int64?)) throws {
        keepAlive = parsed.head.keepAlive
        bodyBytes = 0
        if parsed.head.status == 204 || parsed.head.status == 304 {
            // No body whatever the fields say; the next call reports its end.
            state = .fixed(remaining: 0)
        } else if parsed.transferEncoded {
            // A transfer coding other than chunked last: only the connection's end delimits the body (RFC 9112
            // 6.3). Either way Content-Length is ignored, and the connection is not reused after such a message.
            if parsed.length != nil { keepAlive = false }
            state = parsed.chunked ? .chunkSize : .untilClose
        } else if let length = parsed.length {
            state = .fixed(remaining: length)
        } else {
            state = .untilClose
        }
        if case .untilClose = state { keepAlive = false }
    }

    /// Parses the status line and fields of a complete head (ending with its empty line).
    static func parseHead(
        _ bytes: ByteBufferView
    ) throws -> (head: Head, chunked: Bool, transferEncoded: Bool, length: Int64?) {
        var lines: [ByteBufferView] = []
        var start = bytes.startIndex
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            var end = index
            if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            lines.append(bytes[start..<end])
            start = index + 1
        }
        // The last line is the empty one that ended the head.
        guard let statusLine = lines.first, lines.count >= 2 else {
            throw DownloadError.malformedResponse("empty response head")
        }
        let (minor, status) = try parseStatusLine(statusLine)
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count - 2)
        var connectionClose = false
        var connectionKeepAlive = false
        var chunked = false
        var transferEncoded = false
        var length: Int64?
        for line in lines.dropFirst().dropLast() {
            guard let first = line.first else { throw DownloadError.malformedResponse("empty line inside the head") }
            if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                throw DownloadError.malformedResponse("obsolete line folding in the head")
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw DownloadError.malformedResponse("header line without a colon")
            }
            let nameBytes = line[line.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(isTokenByte) else {
                throw DownloadError.malformedResponse("invalid header name")
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
            headers.append((name, value))
            if asciiCaseInsensitiveEqual(name.utf8, "content-length".utf8) {
                for item in value.utf8.split(separator: UInt8(ascii: ",")) {
                    let digits = trimmed(item[...])
                    guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                        throw DownloadError.malformedResponse("invalid Content-Length '\(value)'")
                    }
                    let parsed = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 48) }
                    if let length, length != parsed {
                        throw DownloadError.malformedResponse("conflicting Content-Length values")
                    }
                    length = parsed
                }
            } else if asciiCaseInsensitiveEqual(name.utf8, "transfer-encoding".utf8) {
                transferEncoded = true
                // Only the last coding decides whether the body is chunked.
                let last = value.utf8.split(separator: UInt8(ascii: ",")).last.map { trimmed($0[...]) }
                chunked = last.map { asciiCaseInsensitiveEqual($0, "chunked".utf8) } ?? false
            } else if asciiCaseInsensitiveEqual(name.utf8, "connection".utf8) {
                for item in value.utf8.split(separator: UInt8(ascii: ",")) {
                    let token = trimmed(item[...])
                    if asciiCaseInsensitiveEqual(token, "close".utf8) { connectionClose = true }
                    if asciiCaseInsensitiveEqual(token, "keep-alive".utf8) { connectionKeepAlive = true }
                }
            }
        }
        // HTTP/1.0 closes unless it says otherwise; HTTP/1.1 keeps the connection unless it says `close`.
        let keepAlive = !connectionClose && (minor >= 1 || connectionKeepAlive)
        return (Head(status: status, headers: headers, keepAlive: keepAlive), chunked, transferEncoded, length)
    }

    /// `HTTP/1.x SSS reason` → (x, SSS).
    private static func parseStatusLine(_ line: ByteBufferView) throws -> (minor: Int, status: Int) {
        let bytes = Array(line)
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, Array(bytes[0..<7]) == prefix, isDigit(bytes[7]), bytes[8] == UInt8(ascii: " "),
            isDigit(bytes[9]), isDigit(bytes[10]), isDigit(bytes[11]),
            bytes.count == 12 || bytes[12] == UInt8(ascii: " ")
        else {
            throw DownloadError.malformedResponse(
                "invalid status line '\(String(decoding: bytes.prefix(80), as: UTF8.self))'")
        }
        let status = Int(bytes[9] - 48) * 100 + Int(bytes[10] - 48) * 10 + Int(bytes[11] - 48)
        guard status >= 100 else { throw DownloadError.malformedResponse("invalid status \(status)") }
        return (Int(bytes[7] - 48), status)
    }

    /// The size of a chunk from its size line (`1a2b;ext=1`).
    static func chunkSize(_ line: ByteBufferView) throws -> Int64 {
        var size: Int64 = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let value = hexValue(line[index]) {
            // 15 hex digits are far beyond any body; more would overflow.
            guard digits < 15 else { throw DownloadError.malformedResponse("chunk size too large") }
            size = size << 4 | Int64(value)
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw DownloadError.malformedResponse("invalid chunk size line") }
        // Whitespace, then extensions after `;`, which are not used.
        while index < line.endIndex, line[index] == UInt8(ascii: " ") || line[index] == UInt8(ascii: "\t") {
            index += 1
        }
        guard index == line.endIndex || line[index] == UInt8(ascii: ";") else {
            throw DownloadError.malformedResponse("invalid chunk size line")
        }
        return size
    }
}

private func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 48...57: byte - 48
    case 65...70: byte - 55
    case 97...102: byte - 87
    default: nil
    }
}

/// RFC 9110 `tchar`.
private func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case 48...57, 65...90, 97...122: true
    default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }
}

/// `bytes` without leading and trailing spaces and tabs.
private func trimmed<C: BidirectionalCollection>(_ bytes: C) -> C.SubSequence where C.Element == UInt8 {
    let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
    guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return bytes[bytes.endIndex...] }
    let last = bytes.lastIndex(where: { !isSpace($0) })!
    return bytes[first...last]
}
