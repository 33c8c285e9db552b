import Foundation
import TestSupport
import Testing

/// `rangecheck serve` as a command: its first lines, its refusals, and a verdict that outlives the process.
@Suite("rangecheck serve")
struct ServeCommandTests {
    @Test("prints exactly the serving lines, answers the API, and keeps verdicts in --results across a restart")
    func servesAndKeeps() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = directory.appendingPathComponent("results.jsonl").path
        let arguments = [
            "serve", "--port", "0", "--tls-port", "0", "--tls-dir", directory.appendingPathComponent("tls").path,
            "--results", results,
        ]
        let first = try await ChildProcess.start(BuiltProducts.rangecheck, arguments)
        let lines = await first.lines(2)
        let plain = try #require(lines.first)
        #expect(plain.wholeMatch(of: /rangecheck serving on http:\/\/127\.0\.0\.1:\d+/) != nil, "\(lines)")
        let secure = try #require(lines.last)
        let ca = directory.appendingPathComponent("tls/ca.pem").path
        #expect(
            secure.wholeMatch(of: /rangecheck serving on https:\/\/127\.0\.0\.1:\d+ \(CA: (.+)\)/)?.output.1
                == Substring(ca),
            "\(lines)")
        let client = ServiceClient(base: String(plain.dropFirst("rangecheck serving on ".count)))
        let run = try await client.createRun("plain", client: "cli")
        let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
        let data = try await client.download(url)
        let verdict = try await client.send(
            "POST", try #require(run["result"] as? String),
            json: ["outcome": "success", "outputs": [ServiceClient.output(route: "", data)]])
        #expect(verdict.object["result"] as? String == "pass")
        first.send(SIGTERM)
        #expect(await first.wait() == .exited(0))
        #expect(first.errors.contains("rangecheck serve: stopped on signal \(SIGTERM)"))

        let second = try await ChildProcess.start(BuiltProducts.rangecheck, arguments)
        let again = try #require(await second.lines(2).first)
        let report = try await ServiceClient(base: String(again.dropFirst("rangecheck serving on ".count)))
            .send("GET", "/_conformance/report?format=markdown")
        second.send(SIGINT)
        #expect(await second.wait() == .exited(0))
        #expect(report.text.contains("| plain | pass |"), "\(report.text)")
    }

    @Test("serve --help is pinned: a changed interface is a visible change (fixtures/cli/rangecheck-serve-help.txt)")
    func helpIsPinned() async throws {
        let child = try await ChildProcess.start(BuiltProducts.rangecheck, ["serve", "--help"])
        #expect(await child.wait() == .exited(0))
        let pinned = try String(
            contentsOfFile: repositoryPath("fixtures/cli/rangecheck-serve-help.txt"), encoding: .utf8)
        #expect(child.output == pinned)
    }

    @Test("a non-loopback --host without --token, a bad --public-url and a bad results file are one-line errors")
    func refusals() async throws {
        let cases: [([String], String)] = [
            (["serve", "--host", "0.0.0.0", "--port", "0"], "--token is required"),
            (["serve", "--port", "0", "--public-url", "http://h/x"], "--public-url must be"),
            (["serve", "--port", "0", "--journal-limit", "0"], "--journal-limit must be at least 1"),
            (["serve", "--port", "0", "--run-limit", "0"], "--run-limit must be from 1 to 100000000, got 0"),
            (["serve", "--port", "0", "--run-expiry", "0"], "--run-expiry must be from 1"),
            (["serve", "--port", "0", "--report-limit", "0"], "--report-limit must be from 1"),
            (["serve", "--port", "0", "--results", "/proc/version"], "/proc/version:1: not a verdict line"),
        ]
        for (arguments, fragment) in cases {
            let child = try await ChildProcess.start(BuiltProducts.rangecheck, arguments)
            let status = await child.wait(limit: .seconds(30))
            #expect(status != nil && status != .exited(0), "\(arguments)")
            let errors = child.errors.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(errors.contains(fragment), "\(arguments): \(errors)")
            #expect(!errors.contains("Fatal error"), "\(errors)")
            #expect(child.output.isEmpty)
        }
    }
}

/// `rangecheck --list --shard I/N`: the listing `scripts/fault-matrix` reads, then the pairs of that shard.
@Suite("rangecheck --list")
struct ListCommandTests {
    @Test(
        "--list --shard keeps the scenario and client lines and adds the shard's pairs; the shards cover every pair once"
    )
    func shardPairs() async throws {
        var pairs: [String] = []
        for index in 1...3 {
            let child = try await ChildProcess.start(
                BuiltProducts.rangecheck,
                [
                    "--list", "--shard", "\(index)/3", "--client", "curl", "--client", "engine", "--scenario",
                    "plain,kill-*",
                ])
            let status = await child.wait(limit: .seconds(60))
            #expect(status == .exited(0), "\(child.errors)")
            let lines = child.output.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("plain: ") })
            #expect(lines.contains { $0.hasPrefix("engine (available)") })
            pairs += lines.filter { $0.hasPrefix("pair ") }
        }
        let expected = ["kill-at-25", "kill-at-50", "kill-at-75", "plain"].flatMap { scenario in
            ["curl", "engine"].map { "pair \(scenario) \($0)" }
        }
        #expect(pairs.sorted() == expected.sorted())
    }
}
