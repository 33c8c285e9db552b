import Foundation
import NIOConcurrencyHelpers
import Synchronization
import TestSupport
import Testing

@testable import RangeServer

/// The journal's `arrivalTime`, and scenario attempts counted in arrival order, over the wire.
@Suite("Server over the wire: arrival time and arrival-ordered attempts")
struct ServerArrivalTests {
    /// A scenario whose attempts 1…12 answer 500…511, so each response shows its attempt number.
    private static let numbered = """
        {
          "description": "Attempt k answers 499 + k.",
          "resource": "/bytes/1K",
          "attempts": [
            { "status": 500 }, { "status": 501 }, { "status": 502 }, { "status": 503 }, { "status": 504 },
            { "status": 505 }, { "status": 506 }, { "status": 507 }, { "status": 508 }, { "status": 509 },
            { "status": 510 }, { "status": 511 }
          ]
        }
        """

    private func configuration() throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("arrival-scenarios")
        try Self.numbered.write(toFile: directory + "/numbered.json", atomically: true, encoding: .utf8)
        return Fixtures.configuration { $0.scenariosDirectory = directory }
    }

    private static func isRFC3339Milliseconds(_ text: String) -> Bool {
        text.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#, options: .regularExpression) != nil
    }

    @Test("arrivalTime is when the request arrived: RFC 3339 with milliseconds, before a stalled response's end")
    func arrivalTime() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/4K?stall-after=1K&stall-for=1s"
            let response = try await FaultWire.get(server, target)
            #expect(response.body.count == 4096)
            let entry = try #require(try await FaultWire.entries(server, target: target).first)
            #expect(Self.isRFC3339Milliseconds(entry.arrivalTime), "\(entry.arrivalTime)")
            // Same format and zone, so the strings order as the times do; the stall separates them by a second.
            #expect(entry.arrivalTime < entry.time, "\(entry.arrivalTime) vs \(entry.time)")

            let document = try await FaultWire.get(server, "/_control/journal")
            let decoded = try FaultWire.decode(FaultWire.JournalDocument.self, document.body)
            #expect(decoded.entries.first { $0.target == target }?.arrivalTime == entry.arrivalTime)
            #expect(String(decoding: document.body, as: UTF8.self).contains(#","arrivalTime":""#))
        }
    }

    @Test("arrivalTime is also written to the journal file")
    func arrivalTimeInFile() async throws {
        let directory = try FaultWire.temporaryDirectory("arrival-journal")
        let file = directory + "/journal.jsonl"
        try await withRangeServer(Fixtures.configuration { $0.journalFile = file }) { server in
            _ = try await FaultWire.get(server, "/bytes/1K")
            _ = try await FaultWire.entries(server, target: "/bytes/1K")
        }
        let line = try #require(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").first)
        let entry = try JSONDecoder().decode(JournalEntry.self, from: Data(line.utf8))
        #expect(Self.isRFC3339Milliseconds(entry.arrivalTime))
        #expect(entry.arrivalTime <= entry.time)
        #expect(entry.faultsApplied == nil)
    }

    @Test("a request that arrived first keeps attempt 1 though a later one is answered before it")
    func attemptFollowsArrivalNotPlanning() async throws {
        try await withRangeServer(try configuration()) { server in
            let port = server.port
            // The first request's headers arrive, but its body does not: the server cannot plan it yet.
            let first = try RawHTTPConnection(port: port)
            try first.send("GET /scenario/numbered/held HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\n")
            // HEAD shows the next attempt's step without counting: once it shows attempt 2 (501), the first
            // request holds attempt 1.
            // Bounded by a deadline, stretched by the time scale.
            let deadline = ContinuousClock.now + scaled(.seconds(30))
            var peek = 0
            while peek != 501 {
                peek = try await FaultWire.get(server, "/scenario/numbered/held", method: "HEAD").status
                guard peek != 501, ContinuousClock.now < deadline else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(peek == 501, "the first request was not counted when its headers arrived")
            let second = try await FaultWire.get(server, "/scenario/numbered/held")
            #expect(second.status == 501, "the later request gets attempt 2")
            try first.send("hello")
            let firstResponse = try first.readResponse()
            #expect(firstResponse.status == 500, "the earlier request keeps attempt 1")

            let entries = await FaultWire.waitForJournal(server)
            let gets = entries.filter { $0.run == "held" && $0.method == "GET" }.sorted { $0.arrival < $1.arrival }
            #expect(gets.map(\.attempt) == [1, 2])
            #expect(gets.map(\.status) == [500, 501])
        }
    }

    @Test("concurrent GETs of one run get attempts 1…N in the order the journal says they arrived")
    func concurrentAttemptsInArrivalOrder() async throws {
        try await withRangeServer(try configuration()) { server in
            let port = server.port
            let count = 12
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        try await FaultWire.blocking {
                            try rawRequest(port: port, "GET", "/scenario/numbered/many").status
                        }
                    }
                }
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.sorted() == Array(500..<(500 + count)), "each attempt was given once")
            let entries = await FaultWire.waitForJournal(server)
            let ordered = entries.filter { $0.run == "many" }.sorted { $0.arrival < $1.arrival }
            #expect(ordered.map(\.attempt) == Array(1...count).map { $0 })
            #expect(ordered.map(\.status) == Array(500..<(500 + count)))
        }
    }
}

@Suite("Journal arrivalTime formatting")
struct JournalArrivalTimeTests {
    @Test("nanoseconds since 1970 become RFC 3339 with milliseconds, truncated, also before 1970")
    func formatting() {
        #expect(JournalSlot.timestamp(nanosecondsSince1970: 0) == "1970-01-01T00:00:00.000Z")
        #expect(JournalSlot.timestamp(nanosecondsSince1970: 1_795_478_731_123_999_999) == "2026-11-24T00:05:31.123Z")
        #expect(JournalSlot.timestamp(nanosecondsSince1970: -1) == "1969-12-31T23:59:59.999Z")
    }
}

@Suite("ScenarioCounters: attempts with arrival numbers")
struct ScenarioCountersArrivalTests {
    @Test("attempts taken with arrival numbers from many threads follow the arrival numbers")
    func attemptsFollowArrival() {
        let counters = ScenarioCounters()
        let arrivals = Atomic<Int>(0)
        // A lock ThreadSanitizer sees (it cannot see `Synchronization.Mutex` on Linux; docs/reliability.md).
        let results = NIOLockedValueBox<[(arrival: Int, attempt: Int)]>([])
        DispatchQueue.concurrentPerform(iterations: 400) { index in
            // Another route's requests take arrival numbers in between without disturbing the order.
            let route = index % 3 == 0 ? "other" : ""
            let taken = counters.nextAttempt(scenario: "s", run: "r", route: route) {
                arrivals.wrappingAdd(1, ordering: .relaxed).newValue
            }
            if route.isEmpty { results.withLockedValue { $0.append(taken) } }
        }
        let ordered = results.withLockedValue { $0 }.sorted { $0.arrival < $1.arrival }
        #expect(ordered.map(\.attempt) == Array(1...ordered.count))
        #expect(counters.currentAttempt(scenario: "s", run: "r", route: "other") == 134)
    }
}
