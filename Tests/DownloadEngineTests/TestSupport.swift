import Crypto
import Foundation
import HTTPTypes
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The fixtures directory of this package, found from this file's path.
let fixturesRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("fixtures/files").path
}()

/// A configuration with fast retries, for tests.
func testConfiguration(_ adjust: (inout DownloadConfiguration) -> Void = { _ in }) -> DownloadConfiguration {
    var configuration = DownloadConfiguration()
    configuration.retry = .init(
        maximumRetries: 5, initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), multiplier: 2)
    configuration.timeouts.idle = scaled(.seconds(10))
    // A deadline for every connect and TLS handshake, which instrumented code on a loaded machine makes slow.
    configuration.timeouts.connect = scaled(.seconds(10))
    configuration.progressInterval = .milliseconds(20)
    adjust(&configuration)
    return configuration
}

/// The SHA-256 of `/bytes/{size}?seed=seed&version=version`, computed from the server's content generator.
func expectedSHA256(size: Int, seed: UInt64 = 0, version: UInt64 = 1) -> String {
    let generator = ContentGenerator(seed: seed, version: version)
    var hasher = SHA256()
    let chunk = 1 << 20
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 8)
    defer { buffer.deallocate() }
    var offset = 0
    while offset < size {
        let n = min(chunk, size - offset)
        let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n])
        generator.fill(slice, offset: UInt64(offset))
        hasher.update(bufferPointer: UnsafeRawBufferPointer(slice))
        offset += n
    }
    return hasher.finalize().map { String(format: "%02x", $0) }.joined()
}

func sha256(ofFile path: String) throws -> String {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

func fileSize(_ path: String) -> Int64? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
}

/// The rangeserver configuration of the engine tests: `/files/` served from the fixtures, every other default.
var fixturesServerConfiguration: RangeServer.Configuration {
    var configuration = RangeServer.Configuration()
    configuration.root = fixturesRoot
    // The server's idle timeout (60 s) is a deadline too: a test task waiting its turn on the two-thread pool
    // under a sanitizer must still find its connection open.
    configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
    return configuration
}

/// Runs `body` with an in-process rangeserver and an engine on a fresh state directory; both are shut down after.
func withEngine<T>(
    _ configuration: DownloadConfiguration = testConfiguration(),
    directory: String? = nil,
    _ body: (RangeServer, DownloadEngine, String) async throws -> T
) async throws -> T {
    return try await withRangeServer(fixturesServerConfiguration) { server in
        try await withEngine(on: server, configuration, directory: directory, body)
    }
}

/// Runs `body` with an engine on a fresh state directory (or `directory`) against a running `server`; the engine is
/// shut down after, whether `body` returned or threw.
func withEngine<T>(
    on server: RangeServer, _ configuration: DownloadConfiguration, directory: String? = nil,
    _ body: (RangeServer, DownloadEngine, String) async throws -> T
) async throws -> T {
    let dir = directory ?? makeTemporaryDirectory()
    let engine = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: configuration)
    do {
        let result = try await body(server, engine, dir)
        await engine.shutdown()
        return result
    } catch {
        await engine.shutdown()
        throw error
    }
}

/// ``requests(_:_:)`` once the server has finished every request it read (`Journal.settled`, at most `timeout` times
/// `testTimeScale`): a response is journalled when the server finishes it, which can be just after the client had
/// all of it, and a response whose client stopped (a pause, a cancel, a kill) when the server notices the close.
/// The server says when that is; nothing is polled.
func settledRequests(
    _ server: RangeServer, _ prefix: String, timeout: Duration = .seconds(10)
) async -> [JournalEntry] {
    _ = await server.journal.settled(timeout: scaled(timeout))
    return requests(server, prefix)
}

/// Journal entries for GET requests whose target starts with `prefix`.
func requests(_ server: RangeServer, _ prefix: String) -> [JournalEntry] {
    server.journal.entries().filter { $0.method == "GET" && $0.target.hasPrefix(prefix) }
}

/// `path` (which has a query) with its body held still after `bytes` bytes (for an hour) on its first request
/// only: `probability=0.5` with `fault-seed=5` applies the faults to the first request of a target and to none of
/// the next four (docs/faults.md, "Sometimes"), so a resume or rerun is served whole. Only for a URL with no other
/// fault: `probability` would withhold those from the later requests too.
///
/// For a test that must pause or kill a download mid-body: it waits until `bytes` arrived and acts then, however
/// late it wakes up, where a paced body could already have ended on a loaded machine (the test's task can wait
/// seconds for a thread of the cooperative pool while the event loops go on downloading).
func stalledOnce(_ path: String, after bytes: Int) -> String {
    path + "&stall-after=\(bytes)&probability=0.5&fault-seed=5"
}

/// Waits (polling) until `condition` holds, failing the test after `timeout` (stretched by the time scale).
func eventually(
    _ timeout: Duration = .seconds(20), _ what: String = "condition",
    _ condition: @Sendable () async -> Bool
) async throws {
    if await waitUntil(within: timeout, condition) { return }
    Issue.record("timed out waiting for \(what)")
    throw CancellationError()
}

/// Collects events in the background.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DownloadEvent] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<DownloadEvent>) {
        task = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
    }

    private func append(_ event: DownloadEvent) { lock.withLock { events.append(event) } }
    var all: [DownloadEvent] { lock.withLock { events } }

    func states(_ id: DownloadTaskID) -> [DownloadState] {
        all.compactMap { if case .stateChanged(id, let s) = $0 { s } else { nil } }
    }

    /// One `retrying` event: the attempt it counts, the delay before the next one and why.
    struct Retry {
        var attempt: Int
        var delay: Duration
        var error: DownloadError
    }

    /// The `retrying` events of `id`, in order.
    func retries(_ id: DownloadTaskID) -> [Retry] {
        all.compactMap {
            if case .retrying(id, let attempt, let delay, let error) = $0 {
                Retry(attempt: attempt, delay: delay, error: error)
            } else {
                nil
            }
        }
    }

    /// A compact name per event of `id`, for order checks.
    func kinds(_ id: DownloadTaskID) -> [String] {
        all.compactMap { event -> String? in
            switch event {
            case .added(id, _): "added"
            case .stateChanged(id, let s): s.rawValue
            case .progress(id, _): "progress"
            case .redirected(id, _): "redirect"
            case .retrying(id, _, _, _): "retry"
            case .completed(id, _, _, _): "completed-event"
            case .failed(id, _): "failed-event"
            default: nil
            }
        }
    }
}

/// Checks that a download of `size` bytes whose every response the server cut after `cut` body bytes was retried
/// from the current offset: the rule, not a count.
///
/// - The first request has no Range; every later one asks `bytes=N-` where the previous response ended as the client
///   held it: exactly after the bytes the server wrote when `everyByteArrives` (a FIN or close_notify delivers
///   them), else no earlier than the previous request started and no later than the bytes the server wrote (an RST
///   discards what the client's kernel held but the client had not read yet, more of it the slower the reader).
/// - Every request after the first follows one `retrying` event of `id` for an error the retry policy retries.
/// - So there are at least `size / cut` requests, rounded up; more when an RST discarded bytes or a slow machine
///   tripped a timeout, and then the requests and their reasons are printed, pass or fail.
func expectRetriedFromOffset(
    _ gets: [JournalEntry], log: EventLog, id: DownloadTaskID, size: Int64, cut: Int64, everyByteArrives: Bool,
    _ label: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    // Events reach the log on their own task: wait for the last one before reading the retries.
    try await eventually(.seconds(5), "completed event") { log.kinds(id).last == "completed" }
    let retries = log.retries(id)
    let story = RetryStory(gets: gets, retries: retries)
    let fewest = Int((size + cut - 1) / cut)
    if gets.count > fewest { print("\(label): \(gets.count) requests: \(story)") }
    #expect(
        gets.first.map { $0.requestHeaders["range"] == nil } == true, "\(label): \(story)",
        sourceLocation: sourceLocation)
    #expect(gets.count >= fewest, "\(label): \(story)", sourceLocation: sourceLocation)
    #expect(
        gets.count == retries.count + 1, "\(label): a request without a retry event: \(story)",
        sourceLocation: sourceLocation)
    #expect(retries.allSatisfy { $0.error.isRetryable }, "\(label): \(story)", sourceLocation: sourceLocation)
    for (previous, next) in zip(gets, gets.dropFirst()) {
        let from = previous.rangeStart ?? 0
        let sent = Int64(previous.bodyBytesSent)
        guard let start = next.rangeStart else {
            Issue.record("\(label): a retry without Range: \(story)", sourceLocation: sourceLocation)
            continue
        }
        if everyByteArrives {
            #expect(start == from + sent, "\(label): \(story)", sourceLocation: sourceLocation)
        } else {
            #expect(start >= from && start <= from + sent, "\(label): \(story)", sourceLocation: sourceLocation)
        }
    }
}

/// The requests and retry events of one download, as a failed retry check prints them.
struct RetryStory: CustomStringConvertible {
    var gets: [JournalEntry]
    var retries: [EventLog.Retry]

    var description: String {
        let requests = gets.map {
            "\($0.requestHeaders["range"] ?? "no Range") -> \($0.status), \($0.bodyBytesSent) bytes sent, \($0.outcome)"
        }
        let events = retries.map { "attempt \($0.attempt) after \($0.delay): \($0.error.kind) (\($0.error.message))" }
        return "requests [\(requests.joined(separator: "; "))], retry events [\(events.joined(separator: "; "))]"
    }
}

extension JournalEntry {
    /// The first byte a `Range: bytes=N-` request asked for; `nil` without such a Range.
    var rangeStart: Int64? {
        guard let range = requestHeaders["range"], range.hasPrefix("bytes="), range.hasSuffix("-") else { return nil }
        return Int64(range.dropFirst("bytes=".count).dropLast())
    }
}

/// Header fields from (name, value) pairs, as the tests list them; every name must be an HTTP token.
func fields(_ pairs: [(name: String, value: String)]) -> HTTPFields {
    HTTPFields(pairs.map { HTTPField(name: HTTPField.Name($0.name)!, value: $0.value) })
}
