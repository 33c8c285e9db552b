import Dispatch
import Foundation
import Logging
import TestSupport
import Testing

@testable import RangeServer

/// A second front end needs no router change: the tests' in-memory front end (`InMemoryFrontEnd`) takes the first two
/// attempts of every catalogue scenario through its own `RequestPipeline` and router, and what it writes agrees
/// with what libmicrohttpd sent for the same attempts, field by field and byte by byte: the status line, every
/// field in order (Date's value aside), the body decoded from its framing, and how the wire ended.
@Suite(.timeLimit(.minutes(5)))
struct FrontEndAgreementTests {
    /// The client's idle timeout on both sides: a stall longer than this is seen as a stall. Stretched by the time
    /// scale for slow builds, but kept under the catalogue's 30 s `stall-for` (under ThreadSanitizer, 3 s stretched
    /// to 30 s let the stall end before the client gave up, and the comparison never met a stall).
    static let clientTimeout = min(scaled(seconds: 3), 10)
    /// Bodies are compared on their first 8 MiB (`large-5g` is 5 GiB).
    static let limit = 8 << 20

    @Test func theInMemoryFrontEndAgreesWithLibmicrohttpdOnTheFirstTwoAttemptsOfEveryScenario() async throws {
        let scenarios = try Scenario.loadDirectory(Fixtures.scenarios)
        #expect(scenarios.count >= 70)
        let configuration = Fixtures.configuration { $0.scenarios = scenarios }
        try await withRangeServer(configuration) { server in
            let memory = try Self.inMemoryFrontEnd(like: server, scenarios: scenarios)
            var disagreements: [String] = []
            var compared = 0
            var seen: Set<String> = []
            // A few scenarios at a time: the live reads block threads of their own, and paced bodies take seconds.
            let names = scenarios.keys.sorted()
            var next = 0
            await withTaskGroup(of: Comparison.self) { group in
                func start() {
                    guard next < names.count else { return }
                    let name = names[next]
                    next += 1
                    group.addTask { await Self.compare(name, port: server.port, memory: memory) }
                }
                for _ in 0..<6 { start() }
                for await comparison in group {
                    disagreements += comparison.disagreements
                    seen.formUnion(comparison.kinds)
                    compared += 1
                    start()
                }
            }
            #expect(compared == scenarios.count)
            // The catalogue's first two attempts end in every way a wire can: the comparison met each of them.
            #expect(
                seen.isSuperset(of: [
                    "closed", "reset", "timed out", "capped", "incomplete", "chunked", "bad chunk", "200", "206",
                    "3xx", "404", "429", "5xx",
                ]), "\(seen.sorted())")
            // Both front ends completed every exchange through their pipelines: the journals agree on what each
            // attempt was and how it ended.
            func summary(_ journal: Journal) -> [String] {
                journal.entries(run: "agree").map { entry in
                    let fields = entry.responseHeaderList.filter { $0.name.lowercased() != "date" }
                        .map { WireView.masked("\($0.name): \($0.value)") }.filter { !$0.contains("boundary=") }
                    return "\(entry.scenario ?? "-") \(entry.attempt ?? 0) \(entry.status) \(entry.outcome.rawValue) "
                        + "\(entry.faults) \(entry.bodyBytesPlanned) \(entry.abandoned) \(fields) "
                        + "\(entry.requestHeaderList.map { "\($0.name): \($0.value)" })"
                }.sorted()
            }
            let expected = 2 * scenarios.count
            _ = await waitUntil { server.journal.entries(run: "agree").count >= expected }
            #expect(summary(memory.pipeline.journal).count == expected)
            let live = summary(server.journal)
            let mine = summary(memory.pipeline.journal)
            let onlyLive = live.filter { !mine.contains($0) }
            let onlyMine = mine.filter { !live.contains($0) }
            #expect(
                onlyLive.isEmpty && onlyMine.isEmpty, "journaled only live: \(onlyLive); only in memory: \(onlyMine)")
            #expect(
                disagreements.isEmpty,
                "\(disagreements.count) disagreements:\n\(disagreements.joined(separator: "\n"))")
        }
    }

    /// The in-memory front end over a router of its own, made from the live server's configuration and knowing its
    /// ports, so redirects name the same places.
    static func inMemoryFrontEnd(like server: RangeServer, scenarios: [String: Scenario]) throws -> InMemoryFrontEnd {
        let journal = try Journal()
        let router = Router(
            configuration: server.configuration, rootPath: realPath(server.configuration.root)!, scenarios: scenarios,
            journal: journal)
        router.boundPort.store(server.port, ordering: .relaxed)
        if let port = server.blackholePort { router.blackholePort.store(port, ordering: .relaxed) }
        if let port = server.tlsPort { router.tlsPort.store(port, ordering: .relaxed) }
        router.tlsFaultPorts.withLockedValue { ports in
            for (fault, port) in server.tlsFaultPorts { ports[fault.rawValue] = port }
        }
        let quiet = Logger(label: "in-memory", factory: { _ in SwiftLogNoOpLogHandler() })
        return InMemoryFrontEnd(
            pipeline: RequestPipeline(router: router, journal: journal, logger: quiet),
            clientTimeout: .seconds(clientTimeout), limit: limit)
    }

    /// Attempt 1 (a plain GET) and attempt 2 (a resume from byte 1000, with If-Range when attempt 1 gave an ETag)
    /// of one scenario, on both front ends.
    static func compare(_ name: String, port: Int, memory: InMemoryFrontEnd) async -> Comparison {
        let target = "/scenario/\(name)/agree"
        var found: [String] = []
        var kinds: Set<String> = []
        var headers: [String: String] = [:]
        for attempt in 1...2 {
            let live: WireView
            do {
                let capture = try await liveCapture(port: port, target: target, headers: headers)
                live = WireView(capture, limit: limit)
            } catch {
                return Comparison(
                    disagreements: found + ["\(name) attempt \(attempt): live request failed: \(error)"], kinds: kinds)
            }
            var mine = WireView(await memory.exchange("GET", target, headers: headers), limit: limit)
            // A multipart boundary is chosen per connection (seeded by its number), as Date's value is per second.
            mine.adoptBoundary(of: live)
            for difference in live.differences(from: mine) {
                found.append("\(name) attempt \(attempt): \(difference)")
            }
            kinds.formUnion(live.kinds)
            headers = ["Range": "bytes=1000-"]
            if let etag = live.field("etag") { headers["If-Range"] = etag }
        }
        return Comparison(disagreements: found, kinds: kinds)
    }

    /// What comparing one scenario found: each disagreement as a line naming the scenario and attempt, and the kinds
    /// of response met (see `WireView.kinds`).
    struct Comparison: Sendable {
        var disagreements: [String]
        var kinds: Set<String>
    }

    /// One exchange with the live server, read to its end on a thread of its own (the reads block).
    static func liveCapture(
        port: Int, target: String, headers: [String: String]
    ) async throws
        -> InMemoryFrontEnd.Capture
    {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let connection = try RawHTTPConnection(port: port, timeout: clientTimeout)
                    try connection.request("GET", target, headers: headers, close: true)
                    let (bytes, ending) = connection.readToEnd(limit: limit)
                    let seen: InMemoryFrontEnd.Ending =
                        switch ending {
                        case .complete: .capped
                        case .closed: .closed
                        case .reset: .reset
                        case .timedOut: .timedOut
                        }
                    continuation.resume(returning: InMemoryFrontEnd.Capture(bytes: bytes, ending: seen))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// A response as captured from the wire, taken apart for comparison: the head's lines as sent, the body decoded
/// from its framing, whatever broke the framing, and how the wire ended.
struct WireView {
    var statusLine = ""
    /// `Name: value` as sent, in order; Date's value masked (the two sides send it at different moments), and so is a
    /// `Retry-After` date (`retry-after-date`'s, the clock at planning plus the delay: a second apart when the two
    /// sides plan on either side of a second's edge, as a loaded machine showed).
    var fields: [String] = []
    var body: [UInt8] = []
    /// Whether the framing said the body was complete (Content-Length reached, the last chunk seen).
    var framedComplete = false
    /// What broke the chunked framing, as found (a chunk-size line that is no number).
    var framingError: String?
    var ending: InMemoryFrontEnd.Ending

    /// A field line with a clock-made value masked: Date's, and a Retry-After that is a date (a delay in seconds is
    /// compared as sent).
    static func masked(_ line: String) -> String {
        let lowered = line.lowercased()
        if lowered.hasPrefix("date:") { return "Date: <masked>" }
        if lowered.hasPrefix("retry-after:"), line.contains("GMT") { return "Retry-After: <masked date>" }
        return line
    }

    init(_ capture: InMemoryFrontEnd.Capture, limit: Int) {
        var bytes = capture.bytes
        ending = capture.ending
        // Each side stops reading somewhere past the limit; compare what both hold.
        if ending == .capped, bytes.count > limit { bytes.removeLast(bytes.count - limit) }
        guard let headEnd = bytes.firstRange(of: [13, 10, 13, 10]) else {
            framingError = bytes.isEmpty ? nil : "no end of head in \(bytes.count) bytes"
            return
        }
        let head = String(decoding: bytes[..<headEnd.lowerBound], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        statusLine = lines.removeFirst()
        fields = lines.map(Self.masked)
        let rest = Array(bytes[headEnd.upperBound...])
        if let coding = field("transfer-encoding"), coding.lowercased().contains("chunked") {
            decodeChunked(rest)
        } else {
            body = rest
            if let declared = field("content-length").flatMap(Int.init) {
                framedComplete = rest.count >= declared
            }
        }
    }

    /// The first value of `name` (case-insensitive).
    func field(_ name: String) -> String? {
        for line in fields {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name else { continue }
            return line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        return nil
    }

    private mutating func decodeChunked(_ bytes: [UInt8]) {
        var index = 0
        while let lineEnd = bytes[index...].firstRange(of: [13, 10]) {
            let line = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
                framingError = "chunk-size line '\(line)'"
                return
            }
            index = lineEnd.upperBound
            if size == 0 {
                framedComplete = true
                return
            }
            let start = index
            let end = min(bytes.count, start + size)
            body += bytes[start..<end]
            // A chunk cut short: the wire ended inside it.
            if end < start + size { return }
            index = min(bytes.count, end + 2)
        }
    }

    /// What kind of response this is, in words the agreement test tallies: how the wire ended, the status class, and
    /// whether the body was chunked, incomplete or broken, or no head came at all.
    var kinds: Set<String> {
        var kinds: Set<String> = [ending.description]
        if statusLine.isEmpty {
            kinds.insert("no head")
        } else if let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) {
            switch status {
            case 206, 304, 416: kinds.insert(String(status))
            case 300..<400: kinds.insert("3xx")
            case 500..<600: kinds.insert("5xx")
            default: kinds.insert(String(status))
            }
        }
        if field("transfer-encoding") != nil { kinds.insert("chunked") }
        if framingError != nil { kinds.insert("bad chunk") }
        if !statusLine.isEmpty && !framedComplete && ending != .capped { kinds.insert("incomplete") }
        return kinds
    }

    /// The multipart boundary in the Content-Type field, if any.
    var boundary: String? {
        field("content-type").flatMap { type in
            type.range(of: "boundary=").map { String(type[$0.upperBound...]) }
        }
    }

    /// Writes `other`'s multipart boundary wherever this view has its own, in the fields and the body.
    mutating func adoptBoundary(of other: WireView) {
        guard let mine = boundary, let theirs = other.boundary, mine.utf8.count == theirs.utf8.count else { return }
        fields = fields.map { $0.replacingOccurrences(of: mine, with: theirs) }
        let from = Array(mine.utf8)
        let to = Array(theirs.utf8)
        var index = 0
        while let found = body[index...].firstRange(of: from) {
            body.replaceSubrange(found, with: to)
            index = found.upperBound
        }
    }

    /// Each way `other` differs from this view, as one line.
    func differences(from other: WireView) -> [String] {
        var found: [String] = []
        if statusLine != other.statusLine { found.append("status line '\(statusLine)' vs '\(other.statusLine)'") }
        if fields != other.fields {
            found.append("fields \(fields) vs \(other.fields)")
        }
        if body != other.body {
            let common = zip(body, other.body).prefix { $0 == $1 }.count
            found.append("body \(body.count) bytes vs \(other.body.count), first difference at \(common)")
        }
        if framedComplete != other.framedComplete {
            found.append("framing complete \(framedComplete) vs \(other.framedComplete)")
        }
        if framingError != other.framingError {
            found.append("framing error \(framingError ?? "none") vs \(other.framingError ?? "none")")
        }
        if ending != other.ending { found.append("ending \(ending) vs \(other.ending)") }
        return found
    }
}
