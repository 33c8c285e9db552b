import Foundation
import TestSupport
import Testing

@testable import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shared helpers for the over-the-wire server suites (`ServerFaultTests`, `ServerScenarioTests`,
/// `ServerJournalTests`, `ServerControlTests`). No tests live here.
enum FaultWire {
    /// Runs blocking socket work on its own thread, so a test waiting on a stalled or paced response does not
    /// hold one of the (two) cooperative-pool threads that every other test needs.
    ///
    /// - Parameters:
    ///   - work: the blocking work.
    /// - Returns: what `work` returned.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.start()
        }
    }

    /// `count` GETs of `target`, each on a connection of its own, sent and not read, with a read deadline of 10 s
    /// stretched by the time scale (for answers that should come). Blocking: call it inside `blocking`.
    static func openGETs(_ count: Int, port: Int, target: String) throws -> [RawHTTPConnection] {
        try (0..<count).map { _ in
            let connection = try RawHTTPConnection(port: port, timeout: scaled(seconds: 10))
            try connection.request("GET", target)
            return connection
        }
    }

    /// Reads from `connection` until the response head and at least `bodyBytes` bytes of body are in, and returns
    /// what was read. Blocking: call it inside `blocking`.
    static func readHead(_ connection: RawHTTPConnection, andBody bodyBytes: Int) throws -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while (bodyCount(received) ?? -1) < bodyBytes {
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, 0) }
            guard count > 0 else { throw RawHTTPError("the response ended early, after \(received.count) bytes") }
            received += chunk[..<count]
        }
        return received
    }

    /// How many bytes follow the response head in `bytes`, or nil when the head has not ended.
    static func bodyCount(_ bytes: [UInt8]) -> Int? {
        bytes.firstRange(of: [13, 10, 13, 10]).map { bytes.count - $0.upperBound }
    }

    /// One request on a fresh connection, read with `RawHTTPConnection`, off the cooperative pool.
    static func get(
        _ server: RangeServer, _ target: String, method: String = "GET", headers: [String: String] = [:]
    ) async throws -> RawHTTPConnection.Response {
        let port = server.port
        return try await blocking { try rawRequest(port: port, method, target, headers: headers) }
    }

    /// The bytes `/bytes/{size}?seed=&version=` serves at `offset ..< offset + count`.
    static func expected(seed: UInt64, version: UInt64 = 1, offset: UInt64 = 0, count: Int) -> [UInt8] {
        ContentGenerator(seed: seed, version: version).bytes(offset: offset, count: count)
    }

    /// The journal once the server has answered every request it has read (`Journal.settled`), which the test's
    /// own requests, already answered or abandoned by the time it asks, are among.
    ///
    /// - Returns: the entries, all of them settled; after `timeout`, stretched by the time scale (a request of the test still open on purpose),
    ///   the entries so far.
    @discardableResult
    static func waitForJournal(_ server: RangeServer, timeout: Duration = .seconds(5)) async -> [JournalEntry] {
        await server.journal.settled(timeout: scaled(timeout)).entries
    }

    /// The settled journal entries for `target`, in the order the requests arrived, expecting at least `count`.
    ///
    /// Ordered by `arrival`, not `seq`: a dropped response is journaled when the server sees the connection end,
    /// which under a sanitizer's slowdown can come after the client's next request (a TSan run saw a HEAD sent after
    /// a dropped GET journaled before it).
    static func entries(
        _ server: RangeServer, target: String, count: Int = 1, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws -> [JournalEntry] {
        let entries = await waitForJournal(server).filter { $0.target == target }.sorted { $0.arrival < $1.arrival }
        #expect(
            entries.count >= count, "\(entries.count) journal entries for \(target)", sourceLocation: sourceLocation)
        return entries
    }

    /// The control API's journal document.
    struct JournalDocument: Decodable {
        var entries: [JournalEntry]
        var dropped: Int
    }

    /// Decodes a JSON body.
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(body))
    }

    /// Seconds as a `Double`, for messages and ratios.
    static func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return Double(whole) + Double(fraction) / 1e18
    }

    /// A response read straight off the socket, with when each part arrived.
    struct TimedResponse: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var ending: RawHTTPConnection.Ending
        var sentAt: ContinuousClock.Instant
        /// When the first byte of the status line arrived.
        var headAt: ContinuousClock.Instant?
        /// Every read that carried body bytes: the body length so far and the arrival time.
        var arrivals: [(count: Int, at: ContinuousClock.Instant)]

        /// The longest silence between two body reads, and how many body bytes had arrived before it.
        var longestGap: (gap: Duration, after: Int) {
            var best: (gap: Duration, after: Int) = (.zero, 0)
            for (previous, next) in zip(arrivals, arrivals.dropFirst()) where next.at - previous.at > best.gap {
                best = (next.at - previous.at, previous.count)
            }
            return best
        }
    }

    /// Sends one GET and reads the response (Content-Length bodies only), timing every read.
    ///
    /// - Parameters:
    ///   - port: the server's port.
    ///   - target: the request target.
    ///   - headers: extra request headers.
    ///   - timeout: the per-read timeout in seconds; by default `RawHTTPConnection`'s (30 s, stretched by the time
    ///     scale).
    /// - Returns: the response; `ending` tells how it ended.
    static func timedGet(
        port: Int, _ target: String, headers: [String: String] = [:], timeout: Int? = nil
    ) throws -> TimedResponse {
        let connection = try RawHTTPConnection(port: port, timeout: timeout)
        let sentAt = ContinuousClock.now
        try connection.request("GET", target, headers: headers, close: true)
        var response = TimedResponse(
            status: 0, headers: [:], body: [], ending: .complete, sentAt: sentAt, headAt: nil, arrivals: []
        )
        var buffer: [UInt8] = []
        var contentLength: Int?
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let length = contentLength, response.body.count >= length { break }
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, 0) }
            let now = ContinuousClock.now
            if count <= 0 {
                if count == 0 {
                    response.ending = .closed
                } else if errno == ECONNRESET {
                    response.ending = .reset
                } else if errno == EINTR {
                    continue
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    response.ending = .timedOut
                } else {
                    response.ending = .closed
                }
                break
            }
            if response.headAt == nil { response.headAt = now }
            if contentLength == nil {
                buffer += chunk[..<count]
                guard let end = find([13, 10, 13, 10], in: buffer) else { continue }
                let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                response.status = Int(head[0].split(separator: " ")[1]) ?? 0
                for line in head.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    response.headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                contentLength = response.headers["content-length"].flatMap(Int.init) ?? 0
                let rest = Array(buffer[(end + 4)...])
                if !rest.isEmpty {
                    response.body += rest
                    response.arrivals.append((response.body.count, now))
                }
            } else {
                response.body += chunk[..<count]
                response.arrivals.append((response.body.count, now))
            }
        }
        if let length = contentLength, response.body.count < length, response.ending == .complete {
            response.ending = .closed
        }
        return response
    }

    private static func find(_ pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        for index in 0...(bytes.count - pattern.count) where bytes[index..<index + pattern.count].elementsEqual(pattern)
        {
            return index
        }
        return nil
    }

    /// A fresh empty directory, removed with its test process's (``makeTestDirectory(prefix:label:)``).
    static func temporaryDirectory(_ label: String) throws -> String {
        let path = makeTestDirectory(prefix: "rangeserver", label: label)
        guard FileManager.default.fileExists(atPath: path) else { throw CocoaError(.fileWriteUnknown) }
        return path
    }
}
