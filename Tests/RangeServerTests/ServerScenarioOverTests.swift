import Foundation
import Testing

@testable import RangeServer

/// `/scenario/NAME/RUN[/ROUTE]/~/FILE`: a scenario's steps over a file below the root, at a URL ending in its name.
@Suite("Server over the wire: a scenario over a file")
struct ServerScenarioOverTests {
    static let scenario = """
        {
          "description": "A drop, a redirect to an edge, then the file.",
          "resource": "/bytes/64K?seed=4",
          "attempts": [ { "drop-after": "1K" }, { "redirect": "edge" } ],
          "routes": { "edge": { "attempts": [ { "status": 503 }, {} ] },
                      "own": { "resource": "/bytes/2K", "attempts": [] } }
        }
        """

    @Test(
        "the steps and faults are the scenario's, the bytes, length and validators the file's; a route redirect keeps the file"
    )
    func stepsOverAFile() async throws {
        let directory = try FaultWire.temporaryDirectory("over")
        try Self.scenario.write(toFile: directory + "/cdn.json", atomically: true, encoding: .utf8)
        let file = try Data(contentsOf: URL(fileURLWithPath: Fixtures.files + "/sample.bin"))
        try await withRangeServer(Fixtures.configuration { $0.scenariosDirectory = directory }) { server in
            let plain = try await FaultWire.get(server, "/files/sample.bin")
            let over = "/scenario/cdn/r1/~/sample.bin"
            let first = try await FaultWire.get(server, over)
            #expect(first.status == 200)
            #expect(first.header("etag") == plain.header("etag"))
            #expect(first.header("content-length") == String(file.count))
            #expect(first.body.count < file.count && file.starts(with: first.body), "dropped after 1K of the file")
            let second = try await FaultWire.get(server, over)
            #expect(second.status == 302)
            #expect(second.header("location") == "/scenario/cdn/r1/edge/~/sample.bin")
            let edge = try await FaultWire.get(server, "/scenario/cdn/r1/edge/~/sample.bin")
            #expect(edge.status == 503)
            let whole = try await FaultWire.get(server, "/scenario/cdn/r1/edge/~/sample.bin")
            #expect(whole.status == 200)
            #expect(Data(whole.body) == file)
            // A route with a resource of its own keeps it.
            let own = try await FaultWire.get(server, "/scenario/cdn/r1/own/~/sample.bin")
            #expect(own.body.count == 2048)
            let entries = await FaultWire.waitForJournal(server)
            let served = entries.filter { $0.run == "r1" && $0.route == "" }
            #expect(served.map(\.attempt) == [1, 2], "the main route's attempts, counted as without ~")
        }
    }

    @Test(
        "a path that is not NAME/RUN[/ROUTE]/~/FILE, or a file outside the root, is a 404 in one line",
        arguments: [
            "/scenario/cdn/r1/~", "/scenario/cdn/r1/edge/x/~/sample.bin", "/scenario/cdn/r1/~/../secret",
            "/scenario/cdn/r1/~/missing.bin", "/scenario/cdn/r1/a/b",
        ])
    func badPaths(path: String) async throws {
        let directory = try FaultWire.temporaryDirectory("over-bad")
        try Self.scenario.write(toFile: directory + "/cdn.json", atomically: true, encoding: .utf8)
        try await withRangeServer(Fixtures.configuration { $0.scenariosDirectory = directory }) { server in
            let response = try await FaultWire.get(server, path)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.status == 404, "\(path): \(text)")
            #expect(text.split(separator: "\n").count == 1)
        }
    }
}
