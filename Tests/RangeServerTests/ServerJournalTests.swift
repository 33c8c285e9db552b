import Foundation
import TestSupport
import Testing

@testable import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The request journal as a running server fills it: in process, over `/_control/journal`, and in the file.
@Suite("Server journal over the wire")
struct ServerJournalTests {
    private static func isRFC3339Milliseconds(_ text: String) -> Bool {
        // 2026-11-21T20:05:31.123Z
        let pattern = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#
        return text.range(of: pattern, options: .regularExpression) != nil
    }

    @Test("an entry carries every field, with the target as received and lower-case header names")
    func entryFields() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/64K?seed=%33&drop-after=16K"
            let response = try await FaultWire.get(server, target, headers: ["X-Test-Marker": "Alpha"])
            #expect(response.body.count == 16_384)
            let entry = try #require(try await FaultWire.entries(server, target: target).first)
            #expect(entry.seq >= 1)
            #expect(Self.isRFC3339Milliseconds(entry.time), "\(entry.time)")
            #expect(entry.method == "GET")
            #expect(entry.target == target)
            #expect(entry.scenario == nil && entry.run == nil && entry.route == nil && entry.attempt == nil)
            #expect(entry.requestHeaders["x-test-marker"] == "Alpha")
            #expect(entry.requestHeaders["host"] == "127.0.0.1")
            #expect(entry.requestHeaders.keys.allSatisfy { $0 == $0.lowercased() })
            #expect(entry.status == 200)
            #expect(entry.responseHeaders["etag"] == response.header("etag"))
            #expect(entry.responseHeaders["accept-ranges"] == "bytes")
            #expect(entry.responseHeaders.keys.allSatisfy { $0 == $0.lowercased() })
            #expect(entry.bodyBytesPlanned == 65_536)
            #expect(entry.bodyBytesSent == 16_384)
            #expect(entry.outcome == .dropped)
            #expect(entry.faults == ["drop-after=16K"])
            #expect(entry.connection > 0)
            #expect(entry.peer.hasPrefix("127.0.0.1"))
        }
    }

    @Test("repeated fields stay apart, in order, in the header lists: in process and over the control API")
    func headerListsKeepRepeats() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/1K?header=X-Cache:MISS&header=X-Cache:HIT&header=Content-Range:bytes%200-9/99"
            // Two request fields of one name, and one whose value has a comma of its own: joined, a reader could not
            // tell the three apart.
            let port = server.port
            let response = try await FaultWire.blocking {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(
                    "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Twice: a\r\nX-Other: b, c\r\nX-Twice: d\r\n\r\n")
                return try connection.readResponse()
            }
            #expect(response.status == 200)
            let entry = try #require(try await FaultWire.entries(server, target: target).first)
            let control = try await FaultWire.get(server, "/_control/journal")
            let document = try FaultWire.decode(FaultWire.JournalDocument.self, control.body)
            let served = try #require(document.entries.first { $0.target == target })
            for entry in [entry, served] {
                #expect(entry.requestHeaders["x-twice"] == "a, d")
                #expect(
                    entry.requestHeaderList.map { "\($0.name): \($0.value)" } == [
                        "Host: 127.0.0.1", "X-Twice: a", "X-Other: b, c", "X-Twice: d",
                    ])
                #expect(entry.responseHeaders["x-cache"] == "MISS, HIT")
                let planned = entry.responseHeaderList.map { "\($0.name): \($0.value)" }
                #expect(planned.filter { $0.hasPrefix("X-Cache") } == ["X-Cache: MISS", "X-Cache: HIT"])
                // The answer's own Content-Range is absent on a 200; the raw one is the only one, as planned.
                #expect(
                    planned.filter { $0.lowercased().hasPrefix("content-range") } == ["Content-Range: bytes 0-9/99"])
                #expect(planned.contains("Accept-Ranges: bytes"))
            }
            // And every entry's lists say what its dictionaries say.
            for entry in document.entries {
                #expect(
                    JournalEntry.headerDictionary(entry.responseHeaderList.map { ($0.name, $0.value) })
                        == entry.responseHeaders)
            }
        }
    }

    @Test("arrival orders requests as received, while seq follows the end of responses")
    func arrivalOrder() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            // The first request stalls after 1K (for the default hour), so it ends (and is journalled) after the
            // second: the test closes it once the second is in the journal. A stall of a second, which the second
            // request had to beat, was a race a loaded machine could lose.
            let stalled = try RawHTTPConnection(port: server.port)
            try stalled.request("GET", "/bytes/4K?stall-after=1K")
            // Reading the first 1K proves the server has the first request before the second is sent.
            let head = try stalled.readResponse(bodyLimit: 1024)
            #expect(head.status == 200)
            _ = try rawRequest(port: server.port, "GET", "/bytes/1K")
            _ = await waitUntil { server.journal.entries().contains { $0.target == "/bytes/1K" } }
            _ = shutdown(stalled.fd, Int32(SHUT_RDWR))
            let entries = try await WireCheck.journalEntries(server, count: 2)
            withExtendedLifetime(stalled) {}
            let first = try #require(entries.first { $0.target.hasPrefix("/bytes/4K") })
            let second = try #require(entries.first { $0.target == "/bytes/1K" })
            #expect(first.seq > second.seq)
            #expect(first.arrival < second.arrival)
            #expect(first.arrival > 0)
        }
    }

    @Test("scenario requests record scenario, run, route and attempt")
    func scenarioFields() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            _ = try await FaultWire.get(server, "/scenario/expiring-redirect/j1")
            _ = try await FaultWire.get(server, "/scenario/expiring-redirect/j1/signed-1")
            let entries = await FaultWire.waitForJournal(server)
            #expect(entries.count == 2)
            #expect(entries.map(\.scenario) == ["expiring-redirect", "expiring-redirect"])
            #expect(entries.map(\.run) == ["j1", "j1"])
            #expect(entries.map(\.route) == ["", "signed-1"])
            #expect(entries.map(\.attempt) == [1, 1])
            #expect(entries.map(\.status) == [302, 200])
            #expect(entries[1].outcome == .dropped)
            #expect(entries[1].faults == ["drop-after=1536K"])
            #expect(entries[1].bodyBytesSent == 1536 * 1024)
        }
    }

    @Test("outcomes: complete, dropped, reset, client-closed and stalled")
    func outcomes() async throws {
        let server = try RangeServer.start(Fixtures.configuration())
        defer { server.stop() }
        let port = server.port
        _ = try await FaultWire.get(server, "/bytes/8K")
        _ = try await FaultWire.get(server, "/bytes/8K?drop-after=1K")
        _ = try await FaultWire.get(server, "/bytes/8K?reset-after=2K")
        // The client goes away in the middle of a paced body.
        try await FaultWire.blocking {
            let connection = try RawHTTPConnection(port: port)
            try connection.request("GET", "/bytes/1M?rate=64K")
            var chunk = [UInt8](repeating: 0, count: 1024)
            _ = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, 0) }
        }
        // A response still stalled when the server stops.
        let stalledClient = try await FaultWire.blocking {
            let connection = try RawHTTPConnection(port: port)
            try connection.request("GET", "/bytes/8K?stall-after=3K&stall-for=60s")
            var received = 0
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while received < 3072 {
                let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress!, $0.count, 0) }
                guard count > 0 else { break }
                received += count
            }
            return UncheckedBox(connection)
        }
        // Until only the stalled response is open: the others are journaled. Waiting for the journal to settle would
        // wait out its whole timeout on the stall, 50 s of the stall's 60 s under ThreadSanitizer's time scale.
        _ = await waitUntil { server.journal.openCount() <= 1 }
        server.stop()
        withExtendedLifetime(stalledClient) {}

        let entries = await FaultWire.waitForJournal(server)
        let byTarget = Dictionary(entries.map { ($0.target, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byTarget["/bytes/8K"]?.outcome == .complete)
        #expect(byTarget["/bytes/8K"]?.bodyBytesSent == 8192)
        #expect(byTarget["/bytes/8K?drop-after=1K"]?.outcome == .dropped)
        #expect(byTarget["/bytes/8K?drop-after=1K"]?.bodyBytesSent == 1024)
        #expect(byTarget["/bytes/8K?reset-after=2K"]?.outcome == .reset)
        #expect(byTarget["/bytes/8K?reset-after=2K"]?.bodyBytesSent == 2048)
        #expect(byTarget["/bytes/1M?rate=64K"]?.outcome == .clientClosed)
        #expect(byTarget["/bytes/8K?stall-after=3K&stall-for=60s"]?.outcome == .stalled)
        #expect(byTarget["/bytes/8K?stall-after=3K&stall-for=60s"]?.bodyBytesSent == 3072)
    }

    @Test("server.journal.entries filters by run, scenario and since")
    func inProcessFilters() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            _ = try await FaultWire.get(server, "/healthz")
            _ = try await FaultWire.get(server, "/scenario/plain/f1")
            _ = try await FaultWire.get(server, "/scenario/plain/f2")
            _ = try await FaultWire.get(server, "/scenario/not-found-404/f1")
            let all = await FaultWire.waitForJournal(server)
            #expect(all.map(\.seq) == all.map(\.seq).sorted())
            #expect(
                server.journal.entries(run: "f1").map(\.target) == ["/scenario/plain/f1", "/scenario/not-found-404/f1"])
            #expect(server.journal.entries(scenario: "plain").map(\.run) == ["f1", "f2"])
            #expect(server.journal.entries(run: "f1", scenario: "plain").count == 1)
            #expect(server.journal.entries(since: all[1].seq).map(\.seq) == [all[2].seq, all[3].seq])
        }
    }

    @Test("GET /_control/journal returns {\"entries\":[...]} with the same filters; control requests are not journaled")
    func overTheWire() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            _ = try await FaultWire.get(server, "/bytes/1K")
            _ = try await FaultWire.get(server, "/scenario/plain/w1")
            _ = try await FaultWire.get(server, "/scenario/plain/w2")
            _ = try await FaultWire.get(server, "/scenario/slow-body/w1", method: "HEAD")
            let inProcess = await FaultWire.waitForJournal(server)

            let all = try await FaultWire.get(server, "/_control/journal")
            #expect(all.status == 200)
            #expect(all.header("content-type") == "application/json")
            let document = try FaultWire.decode(FaultWire.JournalDocument.self, all.body)
            #expect(document.entries == inProcess)
            #expect(document.dropped == 0)

            let run = try FaultWire.decode(
                FaultWire.JournalDocument.self, try await FaultWire.get(server, "/_control/journal?run=w1").body)
            #expect(run.entries.map(\.target) == ["/scenario/plain/w1", "/scenario/slow-body/w1"])
            let scenario = try FaultWire.decode(
                FaultWire.JournalDocument.self,
                try await FaultWire.get(server, "/_control/journal?scenario=plain&run=w2").body
            )
            #expect(scenario.entries.map(\.target) == ["/scenario/plain/w2"])
            let since = try FaultWire.decode(
                FaultWire.JournalDocument.self,
                try await FaultWire.get(server, "/_control/journal?since=\(inProcess[1].seq)").body
            )
            #expect(since.entries.map(\.seq) == [inProcess[2].seq, inProcess[3].seq])

            // Reading the journal did not add to it.
            #expect(server.journal.entries().count == 4)

            let bad = try await FaultWire.get(server, "/_control/journal?colour=blue")
            #expect(bad.status == 400)
            #expect(String(decoding: bad.body, as: UTF8.self).contains("colour"))
            let badSince = try await FaultWire.get(server, "/_control/journal?since=minus-one")
            #expect(badSince.status == 400)
        }
    }

    @Test("control requests are not journaled in origin or absolute form; near misses are")
    func controlDetection() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let port = server.port
            let control = [
                "/_control/journal", "/_control/journal?since=0", "http://127.0.0.1:\(port)/_control/journal",
                "HTTP://127.0.0.1:\(port)/_control/scenarios",
            ]
            let journaled = [
                "/_control", "/_controls/journal", "/_Control/journal", "/bytes/1K", "/x/_control/journal",
            ]
            for target in control + journaled { _ = try rawRequest(port: port, "GET", target) }
            let entries = await FaultWire.waitForJournal(server)
            // Sorted: each request is on a connection of its own, and their ends may be recorded in either order.
            #expect(entries.map(\.target).sorted() == journaled.sorted())
        }
    }

    @Test("DELETE /_control/journal clears the journal; sequence numbers keep increasing")
    func deleteClears() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            _ = try await FaultWire.get(server, "/bytes/1K")
            let before = await FaultWire.waitForJournal(server)
            let cleared = try await FaultWire.get(server, "/_control/journal", method: "DELETE")
            #expect(cleared.status == 200)
            #expect(server.journal.entries().isEmpty)
            let empty = try FaultWire.decode(
                FaultWire.JournalDocument.self, try await FaultWire.get(server, "/_control/journal").body)
            #expect(empty.entries.isEmpty)

            _ = try await FaultWire.get(server, "/bytes/2K")
            let after = await FaultWire.waitForJournal(server)
            #expect(after.map(\.target) == ["/bytes/2K"])
            #expect(after[0].seq > before[0].seq)
        }
    }

    @Test("POST /_control/reset clears the journal and restarts attempt numbering")
    func resetRestartsAttempts() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let url = "/scenario/drop-then-resume/reset-run"
            let firstAttempt = try await FaultWire.get(server, url)
            #expect(firstAttempt.ending == .closed)
            let secondAttempt = try await FaultWire.get(server, url)
            #expect(secondAttempt.ending == .complete)
            _ = await FaultWire.waitForJournal(server)

            let reset = try await FaultWire.get(server, "/_control/reset", method: "POST")
            #expect(reset.status == 200)
            #expect(server.journal.entries().isEmpty)

            let again = try await FaultWire.get(server, url)
            #expect(again.ending == .closed, "attempt 1 again: drop-after=2400K")
            #expect(again.body.count == 2_457_600)
            let entries = await FaultWire.waitForJournal(server)
            #expect(entries.map(\.attempt) == [1])

            let wrongMethod = try await FaultWire.get(server, "/_control/reset")
            #expect(wrongMethod.status == 405)
        }
    }

    @Test("journalFile appends every entry as a JSON line")
    func journalFile() async throws {
        let directory = try FaultWire.temporaryDirectory("journal")
        let path = directory + "/journal.jsonl"
        try "".write(toFile: path, atomically: true, encoding: .utf8)
        let targets = ["/bytes/1K", "/files/hello.txt", "/bytes/4K?drop-after=1K", "/scenario/plain/file"]
        try await withRangeServer(Fixtures.configuration { $0.journalFile = path }) { server in
            for target in targets { _ = try await FaultWire.get(server, target) }
            let entries = await FaultWire.waitForJournal(server)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let lines = text.split(separator: "\n")
            #expect(text.hasSuffix("\n"))
            #expect(lines.count == targets.count)
            let decoded = try lines.map { try JSONDecoder().decode(JournalEntry.self, from: Data($0.utf8)) }
            #expect(decoded == entries)
            // In the order the responses ended, which for the dropped one is when its client was seen to close.
            #expect(decoded.sorted { $0.arrival < $1.arrival }.map(\.target) == targets)
        }
        // A second server appends rather than truncating.
        try await withRangeServer(Fixtures.configuration { $0.journalFile = path }) { server in
            _ = try await FaultWire.get(server, "/healthz")
            _ = await FaultWire.waitForJournal(server)
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == targets.count + 1)
    }

    @Test("journalLimit keeps the newest entries and counts the dropped ones")
    func boundedMemory() async throws {
        try await withRangeServer(Fixtures.configuration { $0.journalLimit = 5 }) { server in
            for index in 1...8 {
                _ = try await FaultWire.get(server, "/bytes/\(index)")
                _ = await FaultWire.waitForJournal(server)
            }
            #expect(server.journal.entries().map(\.target) == (4...8).map { "/bytes/\($0)" })
            #expect(server.journal.droppedCount == 3)
            let document = try FaultWire.decode(
                FaultWire.JournalDocument.self, try await FaultWire.get(server, "/_control/journal").body
            )
            #expect(document.entries.count == 5)
            #expect(document.dropped == 3)
        }
    }
}

/// Keeps a non-Sendable value alive across an `await`; used only where one task owns it.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
