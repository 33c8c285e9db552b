import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// A stopped server is freed with everything it owns: the journal with its staging shards, and the scenarios.
@Suite("Server lifetime")
struct ServerLifetimeTests {
    @Test("a stopped server and its journal are freed, after more exchanges than a staging shard holds")
    func freedAfterStop() async throws {
        for round in 0..<2 {
            weak var server: RangeServer?
            weak var journal: Journal?
            try await withRangeServer(Fixtures.configuration()) { running in
                server = running
                journal = running.journal
                #expect(!running.scenarios.isEmpty)
                let port = running.port
                let count = Journal.stagingLimit + 44
                // Over one keep-alive connection: staged, merged into the ring, staged again.
                let statuses = try await FaultWire.blocking {
                    let connection = try RawHTTPConnection(port: port)
                    return try (0..<count).map { index in
                        try connection.request("GET", "/bytes/1K?seed=\(index)")
                        return try connection.readResponse().status
                    }
                }
                #expect(statuses.allSatisfy { $0 == 200 })
                let entries = await FaultWire.waitForJournal(running)
                #expect(entries.count == count)
            }
            let deadline = ContinuousClock.now + scaled(.seconds(5))
            while server != nil || journal != nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server == nil, "round \(round): the server is still alive")
            #expect(journal == nil, "round \(round): the journal is still alive")
        }
    }
}
