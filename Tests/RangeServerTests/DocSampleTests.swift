import Foundation
import Testing

@testable import RangeServer

/// The README's "In a Swift test" sample, compiled and run here. `scripts/check-docs` checks that the lines
/// between the markers are the README's sample, so the README cannot drift from an API that compiles and works.
@Suite("README sample")
struct DocSampleTests {
    @Test("the README's Swift sample runs and sees the dropped download in the journal")
    func readmeSample() async throws {
        // doc-sample: README.md
        let entries = try await withRangeServer { server in
            let url = server.baseURL + "/bytes/8M?drop-after=3M"
            try await runClientUnderTest(url)  // yours: URLSession, a subprocess, ...
            // Every request it sent, as the server saw it, once the server has answered them all.
            return await server.journal.settled().entries
        }
        for entry in entries { print(entry.method, entry.requestHeaders["range"] ?? "-", entry.status, entry.outcome) }
        // end doc-sample
        #expect(entries.map(\.target) == ["/bytes/8M?drop-after=3M"])
        #expect(entries.first?.status == 200)
        #expect(entries.first?.outcome == .dropped)
        #expect(entries.first.map { $0.bodyBytesSent <= 3 << 20 } == true)
    }
}

/// Stands in for the client under test: one GET read until the server drops the connection. The sample's
/// `settled()` then waits for the server to have journaled it.
private func runClientUnderTest(_ url: String) async throws {
    let parsed = try #require(URL(string: url))
    let port = try #require(parsed.port)
    let target = parsed.path + "?" + (parsed.query ?? "")
    _ = try? await FaultWire.blocking { try rawRequest(port: port, "GET", target) }
}
