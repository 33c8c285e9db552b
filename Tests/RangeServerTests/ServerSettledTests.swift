import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// A run's journal settles when no request of it is open, and a response a client left of its own accord does not use
/// up its scenario attempt.
@Suite("Settled journal and abandoned responses")
struct ServerSettledTests {
    private static let scenarios = [
        "stalls.json": """
        {"description": "Stalls for long.", "resource": "/bytes/1M?seed=3",
         "attempts": [{"stall-after": "4K", "stall-for": "60s"}, {}]}
        """,
        "waits.json": """
        {"description": "Holds the headers back for long.", "resource": "/bytes/64K?seed=3",
         "attempts": [{"delay": "60s"}, {}]}
        """,
        "drops.json": """
        {"description": "Drops the first download late.", "resource": "/bytes/8M?seed=4",
         "attempts": [{"drop-after": "3M"}, {}]}
        """,
        "counted.json": """
        {"description": "Drops the first download late; probes count.", "resource": "/bytes/8M?seed=4",
         "count-probes": true, "attempts": [{"drop-after": "3M"}, {}]}
        """,
    ]

    private func configuration() throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("settled")
        for (name, text) in Self.scenarios {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return Fixtures.configuration { $0.scenariosDirectory = directory }
    }

    /// Reads the status line and headers and a few body bytes of a GET, then closes: a probe.
    private func probe(_ server: RangeServer, _ target: String) async throws {
        let port = server.port
        try await FaultWire.blocking {
            let connection = try RawHTTPConnection(port: port)
            try connection.request("GET", target)
            _ = try connection.readResponse(bodyLimit: 512)
        }
    }

    @Test("a run with a stalled response is open until its client closes, then settles at once, as stalled")
    func stalledRunSettlesWhenTheClientLeaves() async throws {
        try await withRangeServer(configuration()) { server in
            let port = server.port
            var opened: UncheckedConnection? = try await FaultWire.blocking {
                let connection = try RawHTTPConnection(port: port)
                try connection.request("GET", "/scenario/stalls/s1")
                _ = try connection.readResponse(bodyLimit: 4096)
                return UncheckedConnection(connection: connection)
            }
            #expect(server.journal.openCount(run: "s1") == 1)
            // Still open while the client waits on the stall.
            let early = await server.journal.settled(run: "s1", timeout: .milliseconds(300))
            #expect(!early.settled)
            #expect(early.entries.isEmpty)
            #expect(opened != nil)
            opened = nil
            // Well within the 60-second stall: the server noticed the close. The timeout is a deadline (stretched by
            // the time scale), unlike the 300 ms above, which the test expects to run out.
            let (settled, entries) = await server.journal.settled(run: "s1", timeout: scaled(.seconds(20)))
            #expect(settled)
            #expect(entries.map(\.outcome) == [.stalled])
            #expect(entries.first?.abandoned == false)
            #expect(server.journal.openCount(run: "s1") == 0)
        }
    }

    @Test("a delay the client gave up on ends its request: the run settles, and the attempt stays spent")
    func abandonedDelaySettles() async throws {
        try await withRangeServer(configuration()) { server in
            var connection: RawHTTPConnection? = try RawHTTPConnection(port: server.port)
            try connection!.request("GET", "/scenario/waits/w1")
            // Sent, not read: the delay holds the headers back. Until the server has read the request, rather than a
            // fixed pause a loaded machine can outlast.
            _ = await waitUntil { server.journal.openCount(run: "w1") > 0 }
            #expect(server.journal.openCount(run: "w1") == 1)
            connection = nil
            let (settled, entries) = await server.journal.settled(run: "w1", timeout: scaled(.seconds(20)))
            #expect(settled)
            #expect(entries.count == 1)
            #expect(entries.first?.outcome == .clientClosed)
            // The delay had taken effect: the client left because of it, not of its own accord.
            #expect(entries.first?.abandoned == false)
            let next = try await FaultWire.get(server, "/scenario/waits/w1")
            #expect(next.status == 200)
            let all = await server.journal.settled(run: "w1", timeout: scaled(.seconds(10))).entries
            #expect(all.last?.attempt == 2)
        }
    }

    @Test("a probe that reads the first bytes and closes gives its attempt back: the download meets the drop")
    func probeDoesNotUseTheFaultedAttempt() async throws {
        try await withRangeServer(configuration()) { server in
            for _ in 0..<3 { try await probe(server, "/scenario/drops/p1") }
            let download = try await FaultWire.get(server, "/scenario/drops/p1")
            #expect(download.ending == .closed)
            #expect(download.body.count == 3 << 20)
            let (settled, entries) = await server.journal.settled(run: "p1", timeout: scaled(.seconds(20)))
            #expect(settled)
            #expect(entries.count == 4)
            let ordered = entries.sorted { $0.arrival < $1.arrival }
            #expect(ordered.map(\.attempt) == [1, 1, 1, 1])
            #expect(ordered.prefix(3).allSatisfy { $0.abandoned && $0.outcome == .clientClosed })
            #expect(ordered.last?.outcome == .dropped)
            #expect(ordered.last?.abandoned == false)
            // A client that read up to the drop met it: the next request takes the next attempt.
            let resumed = try await FaultWire.get(server, "/scenario/drops/p1")
            let after = await server.journal.settled(run: "p1", timeout: scaled(.seconds(10))).entries
            // What each request met, for a failure to explain itself (one TSAN run saw the next request not complete).
            let seen = after.map {
                "attempt \($0.attempt ?? 0) \($0.outcome), \($0.bodyBytesSent) bytes, abandoned \($0.abandoned)"
            }
            #expect(
                resumed.status == 200 && resumed.ending == .complete,
                "\(resumed.status) \(resumed.ending) after \(resumed.body.count) bytes; \(seen)")
            #expect(after.last?.attempt == 2, "\(seen)")
        }
    }

    @Test("a scenario with count-probes spends an attempt on each probe, as on any request")
    func countedProbes() async throws {
        try await withRangeServer(configuration()) { server in
            try await probe(server, "/scenario/counted/c1")
            _ = await server.journal.settled(run: "c1", timeout: scaled(.seconds(20)))
            let download = try await FaultWire.get(server, "/scenario/counted/c1")
            #expect(download.ending == .complete)
            let entries = await server.journal.settled(run: "c1", timeout: scaled(.seconds(20))).entries
            #expect(entries.sorted { $0.arrival < $1.arrival }.map(\.attempt) == [1, 2])
        }
    }

    @Test("the control API waits for a run to settle with settled=DURATION and says whether it did")
    func controlSettled() async throws {
        try await withRangeServer(configuration()) { server in
            _ = try await FaultWire.get(server, "/scenario/drops/k1?drop-after=1K")
            let port = server.port
            // The server's own wait is a deadline too: stretched by the time scale, within the 60 s it accepts.
            let settle: Int = min(scaled(seconds: 5), 60)
            let answer = try await FaultWire.blocking {
                try rawRequest(port: port, "GET", "/_control/journal?run=k1&settled=\(settle)s")
            }
            #expect(answer.status == 200)
            #expect(answer.header("Journal-Settled") == "true")
            #expect(String(decoding: answer.body, as: UTF8.self).contains("\"run\":\"k1\""))
            let refused = try await FaultWire.blocking {
                try rawRequest(port: port, "GET", "/_control/journal?run=k1&settled=2h")
            }
            #expect(refused.status == 400)
        }
    }

    @Test("a journal query naming a run waits up to 2 s for the run's open exchanges; settled=0 answers at once")
    func runQueriesSettleByDefault() async throws {
        try await withRangeServer(configuration()) { server in
            let port = server.port
            // A response read whole, then its run's journal asked for at once: the exchange is in it, although it is
            // journaled only after its body ended.
            for index in 0..<20 {
                let run = "r\(index)"
                let body = try await FaultWire.get(server, "/scenario/drops/\(run)?drop-after=1K")
                #expect(body.status == 200)
                let answer = try await FaultWire.blocking {
                    try rawRequest(port: port, "GET", "/_control/journal?run=\(run)")
                }
                #expect(answer.header("Journal-Settled") == "true")
                #expect(String(decoding: answer.body, as: UTF8.self).contains("\"run\":\"\(run)\""), "run \(run)")
            }
            // A run with a request held open (a 60 s delay): the default wait runs out and says so.
            var connection: RawHTTPConnection? = try RawHTTPConnection(port: port)
            try connection!.request("GET", "/scenario/waits/held")
            _ = await waitUntil { server.journal.openCount(run: "held") > 0 }
            #expect(server.journal.openCount(run: "held") == 1)
            let started = ContinuousClock.now
            let waited = try await FaultWire.blocking {
                try rawRequest(port: port, "GET", "/_control/journal?run=held")
            }
            #expect(ContinuousClock.now - started >= .milliseconds(1900))
            #expect(waited.status == 200)
            #expect(waited.header("Journal-Settled") == "false")
            // settled=0, and a query without a run, answer the journal as it is, without waiting.
            for target in ["/_control/journal?run=held&settled=0", "/_control/journal"] {
                let answer = try await FaultWire.blocking { try rawRequest(port: port, "GET", target) }
                #expect(answer.status == 200, "\(target)")
                #expect(answer.header("Journal-Settled") == nil, "\(target)")
            }
            connection = nil
            _ = connection
        }
    }
}

/// A connection handed from the thread that opened it to the test, which alone uses it from then on.
private struct UncheckedConnection: @unchecked Sendable {
    let connection: RawHTTPConnection
}
