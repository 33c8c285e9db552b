import Conformance
import Crypto
import Foundation
import RangeServer
import TestSupport
import Testing

/// The reproducer carried out by hand: a failing pair is run by the harness, then its reproducer's own commands are
/// run as a tester would (the server, the setup, the client, the comparisons), so the printed commands are shown to
/// work, not only printed.
@Suite(
    .serialized,
    .enabled(
        if: BuiltProducts.onPath("python3") != nil && BuiltProducts.onPath("curl") != nil
            && FileManager.default.isExecutableFile(atPath: BuiltProducts.path(of: "rangeserver")),
        "needs python3, curl and the built rangeserver"))
struct ReproducerEndToEndTests {
    /// Runs `line` with `sh -c` in the package root; its exit status and standard output.
    static func shell(_ line: String) async throws -> (status: Int32?, output: String) {
        let child = try await ChildProcess.start("/bin/sh", ["-c", line], directory: BuiltProducts.repositoryRoot)
        guard case .exited(let code) = await child.wait(limit: .seconds(60)) else { return (nil, child.output) }
        return (code, child.output)
    }

    static func sha256(of path: String) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    @Test("a naive downloader's corrupt version-change cell, reproduced by hand from its reproducer")
    func naiveVersionChangeByHand() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let scratch = NSTemporaryDirectory() + "reproducer-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.scenariosDirectory = "fixtures/scenarios"
        configuration.blackholePort = 0
        let entry = try #require(
            try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files").first {
                $0.name == "version-change"
            })
        var options = MatrixRunner.Options()
        options.serverProgram = BuiltProducts.path(of: "rangeserver")
        options.reproductionDirectory = scratch
        let client = try downloader.client("naive")
        let cell = try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(entry, client: client, server: server, options: options)
        }
        #expect(cell.grade == .corrupt, "\(cell.label): \(cell.result.reason)")
        let reproducer = try #require(cell.reproducer)
        #expect(reproducer.compare.observed == cell.result.reason)
        #expect(reproducer.directory == "\(scratch)/version-change/naive")
        let run = try #require(
            reproducer.client.components(separatedBy: "/scenario/version-change/").last.map {
                String($0.prefix { $0 != " " })
            })
        #expect(run.hasPrefix("naive-"))

        // The server, exactly as given but on a free port (8080 may be taken here): its first line names the port.
        #expect(reproducer.server.contains(" --port 8080"))
        let server = try await ChildProcess.start(
            "/bin/sh", ["-c", "exec " + reproducer.server.replacingOccurrences(of: " --port 8080", with: " --port 0")],
            directory: BuiltProducts.repositoryRoot)
        defer { server.send(SIGTERM) }
        let line = await server.firstLine()
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) }, "rangeserver said: \(line)")
        func here(_ text: String) -> String {
            text.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
        }

        for step in reproducer.setup {
            #expect(try await Self.shell(here(step)).status == 0, "\(step)")
        }
        // The naive client reports success, as in the run ...
        let ran = try await Self.shell(here(reproducer.client))
        #expect(ran.status == 0, "\(reproducer.client)")
        // ... and its output is not the representation whose digest the reproducer gives: corrupt, by hand too.
        let output = try #require(reproducer.compare.outputs.first)
        let digest = try #require(reproducer.compare.sha256)
        #expect(try Self.sha256(of: output) != digest)
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)).count == 4 << 20, "spliced, not short")
        // The digest is that of the version the row expects, as the server serves it.
        let reference = try await Self.shell(
            "curl -sS 'http://127.0.0.1:\(port)/bytes/4M?seed=11&version=2' | sha256sum")
        #expect(reference.output.hasPrefix(digest))

        // The journal query, as given, lists the run's requests: a resume with no If-Range met the new version.
        let journal = try await Self.shell(here(reproducer.compare.journal))
        #expect(journal.status == 0)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(journal.output.utf8)) as? [String: Any])
        let entries = try #require(document["entries"] as? [[String: Any]])
        #expect(entries.count >= 2, "\(journal.output)")
        #expect(entries.allSatisfy { $0["run"] as? String == run && $0["scenario"] as? String == "version-change" })
        let resumed = entries.filter { ($0["requestHeaders"] as? [String: String])?["range"] != nil }
        #expect(!resumed.isEmpty)
        #expect(resumed.allSatisfy { ($0["requestHeaders"] as? [String: String])?["if-range"] == nil })
        server.send(SIGTERM)
        #expect(await server.wait(limit: .seconds(10)) != nil, "rangeserver stops on SIGTERM")
    }
}
