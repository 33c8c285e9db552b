import Foundation
import TestSupport
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
            return server.journal.entries()  // every request it sent, as the server saw it
        }
        for entry in entries { print(entry.method, entry.requestHeaders["range"] ?? "-", entry.status, entry.outcome) }
        // end doc-sample
        #expect(entries.map(\.target) == ["/bytes/8M?drop-after=3M"])
        #expect(entries.first?.status == 200)
        #expect(entries.first?.outcome == .dropped)
        #expect(entries.first.map { $0.bodyBytesSent <= 3 << 20 } == true)
    }
}

/// Stands in for the client under test: one GET read until the server drops the connection. It then waits
/// (through the control API, as a client in another process would) until the server has journaled the exchange,
/// which happens as libmicrohttpd closes the connection, a moment around the client's end of file.
private func runClientUnderTest(_ url: String) async throws {
    let parsed = try #require(URL(string: url))
    let port = try #require(parsed.port)
    let target = parsed.path + "?" + (parsed.query ?? "")
    _ = try? await FaultWire.blocking { try rawRequest(port: port, "GET", target) }
    let deadline = ContinuousClock.now + scaled(.seconds(10))
    while ContinuousClock.now < deadline {
        let response = try await FaultWire.blocking { try rawRequest(port: port, "GET", "/_control/journal") }
        let document = try FaultWire.decode(FaultWire.JournalDocument.self, response.body)
        if document.entries.contains(where: { $0.target == target }) { return }
        try await Task.sleep(for: .milliseconds(10))
    }
}
