import Foundation
import Testing

@testable import RangeServer

/// `probability` and `fault-seed` over the wire: which requests get the faults, reproducibly, and what the journal
/// says about each.
@Suite("Server over the wire: probabilistic faults")
struct ServerChanceTests {
    @Test("the k-th request to a target gets its faults exactly when the seeded draw says so, again after a reset")
    func reproducibleDraws() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/4K?seed=5&drop-after=1K&probability=0.5&fault-seed=7"
            let expected = (UInt64(1)...16).map { FaultChance.applies(millionths: 500_000, seed: 7, draw: $0) }
            // Both outcomes occur in these 16 draws, so the test can tell the faults apart from no faults.
            #expect(expected.contains(true) && expected.contains(false))
            for round in 0..<2 {
                for (index, applies) in expected.enumerated() {
                    let response = try await FaultWire.get(server, target)
                    #expect(response.status == 200)
                    #expect(response.header("content-length") == "4096")
                    #expect(response.body.count == (applies ? 1024 : 4096), "round \(round), request \(index + 1)")
                    #expect(response.ending == (applies ? .closed : .complete), "round \(round), request \(index + 1)")
                }
                let entries = try await FaultWire.entries(server, target: target, count: expected.count)
                    .sorted { $0.arrival < $1.arrival }
                #expect(entries.map(\.faultsApplied) == expected.map { $0 })
                for (entry, applies) in zip(entries, expected) {
                    let names = ["probability=0.5", "fault-seed=7"]
                    #expect(entry.faults == (applies ? ["drop-after=1K"] + names : names))
                    #expect(entry.outcome == (applies ? .dropped : .complete))
                }
                // A reset starts every target's count afresh: the second round repeats the first.
                _ = try await FaultWire.get(server, "/_control/reset", method: "POST")
            }
        }
    }

    @Test("each target counts its own requests; another seed gives another sequence")
    func perTargetCounts() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for seed in [UInt64(0), 3] {
                let target = "/bytes/2K?status=503&probability=0.3" + (seed == 0 ? "" : "&fault-seed=\(seed)")
                var statuses: [Int] = []
                for _ in 0..<12 { statuses.append(try await FaultWire.get(server, target).status) }
                let expected = (UInt64(1)...12).map {
                    FaultChance.applies(millionths: 300_000, seed: seed, draw: $0) ? 503 : 200
                }
                #expect(statuses == expected, "seed \(seed)")
            }
        }
    }

    @Test("probability=1 always applies; an entry without probability has faultsApplied null")
    func certainAndAbsent() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let certain = "/bytes/1K?no-etag=1&probability=1"
            for _ in 0..<3 {
                let response = try await FaultWire.get(server, certain)
                #expect(response.header("etag") == nil)
            }
            let plain = "/bytes/1K?no-etag=1"
            _ = try await FaultWire.get(server, plain)
            let entries = try await FaultWire.entries(server, target: certain, count: 3)
            #expect(entries.allSatisfy { $0.faultsApplied == true })
            let plainEntry = try #require(try await FaultWire.entries(server, target: plain).first)
            #expect(plainEntry.faultsApplied == nil)

            // The JSON says so too: a boolean with probability, null without.
            let document = try await FaultWire.get(server, "/_control/journal")
            let text = String(decoding: document.body, as: UTF8.self)
            #expect(text.contains(#""faultsApplied":true"#))
            #expect(text.contains(#""faultsApplied":null"#))
        }
    }
}
