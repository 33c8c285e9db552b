import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs `rangecheck serve --port 0` on loopback for `body`, with the service's base URL, and stops it afterwards
/// whether `body` passed or threw.
private func withServe<T>(_ body: (String) async throws -> T) async throws -> T {
    let results = NSTemporaryDirectory() + "serve-results-\(UUID().uuidString).jsonl"
    let serve = try await ChildProcess.start(
        BuiltProducts.rangecheck, ["serve", "--host", "127.0.0.1", "--port", "0", "--results", results])
    defer { try? FileManager.default.removeItem(atPath: results) }
    let line = await serve.firstLine(limit: .seconds(60))
    let prefix = "rangecheck serving on "
    do {
        try #require(line.hasPrefix(prefix + "http://127.0.0.1:"), "rangecheck serve said '\(line)': \(serve.errors)")
        let result = try await body(String(line.dropFirst(prefix.count)))
        serve.send(SIGINT)
        _ = await serve.wait(limit: .seconds(30))
        return result
    } catch {
        serve.send(SIGINT)
        _ = await serve.wait(limit: .seconds(30))
        throw error
    }
}

/// A reference client's run: its exit status and the verdict lines it printed, by scenario.
private struct ClientRun {
    var status: Int32
    var verdicts: [String: String]
    var output: String

    init(_ child: ChildProcess) async throws {
        let termination = try #require(await child.wait(limit: .seconds(300)), "the client did not finish")
        status = ChildProcess.code(termination)
        output = child.output + child.errors
        verdicts = [:]
        // `pass NAME`, `GRADE NAME: REASON` (`corrupt`, `fail`, `unsafe`, `costly`), `n/a  NAME: REASON`.
        for line in child.output.split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard words.count == 2, ["pass", "corrupt", "fail", "unsafe", "costly", "n/a"].contains(words[0]) else {
                continue
            }
            let name = words[1].split(separator: ":", maxSplits: 1)[0].trimmingCharacters(in: .whitespaces)
            verdicts[name] = String(line)
        }
    }
}

/// The cells of the service's report for `client`, as `GET /_conformance/report?format=json` gives them.
private func reportCells(_ base: String, client: String) async throws -> [String: String] {
    struct Report: Decodable {
        struct Cell: Decodable {
            var scenario: String
            var client: String
            var result: String
        }

        var cells: [Cell]
    }
    let url = try #require(URL(string: base + "/_conformance/report?format=json"))
    let (data, _) = try await URLSession.shared.data(from: url)
    let report = try JSONDecoder().decode(Report.self, from: data)
    return Dictionary(
        report.cells.filter { $0.client == client }.map { ($0.scenario, $0.result) }, uniquingKeysWith: { $1 })
}

/// The two reference clients of `rangecheck serve` (scripts/conformance-client and urlsession-conformance) against
/// the real service on loopback, as a Kotlin or iOS developer would run the code they copy.
@Suite("rangecheck serve and its reference clients", .serialized)
struct ServeReferenceClientTests {
    @Test(
        "scripts/conformance-client with curl: plain passes, kill-at-25 and version-change fail (no If-Range)",
        .enabled(if: BuiltProducts.onPath("curl") != nil && BuiltProducts.onPath("python3") != nil))
    func pythonClientWithCurl() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        try await withServe { base in
            let client = try await ChildProcess.start(
                BuiltProducts.repositoryRoot + "/scripts/conformance-client",
                [
                    "--server", base, "--client-label", "curl-python", "--command",
                    "curl -sS -f -C - -o {output} {url}",
                    "--scenario", "plain,kill-at-25,version-change,cancel",
                ])
            let run = try await ClientRun(client)
            #expect(run.status == 1, "\(run.output)")
            #expect(run.verdicts["plain"] == "pass plain", "\(run.output)")
            // Graded: kill-at-25's output is right, but resumed without a validator, which splices version-change.
            #expect(run.verdicts["kill-at-25"]?.hasPrefix("unsafe kill-at-25: Range request without If-Range") == true)
            #expect(run.verdicts["kill-at-25"]?.contains("corrupts the file in version-change") == true)
            #expect(run.verdicts["version-change"]?.hasPrefix("corrupt version-change: spliced versions") == true)
            // curl leaves its partial file when it is terminated: a cancel must leave none.
            #expect(run.verdicts["cancel"]?.hasPrefix("fail cancel: left") == true, "\(run.output)")
            #expect(
                run.output.contains("curl-python: 1 pass, 1 corrupt, 1 unsafe, 1 fail, 0 costly, 0 n/a"),
                "\(run.output)")
            let cells = try await reportCells(base, client: "curl-python")
            #expect(
                cells == ["plain": "pass", "kill-at-25": "FAIL", "version-change": "FAIL", "cancel": "FAIL"], "\(cells)"
            )
        }
    }

    @Test(
        "scripts/conformance-client with a command that names its file: name-change-on-resume judged from its directory",
        .enabled(if: BuiltProducts.onPath("python3") != nil))
    func pythonClientNamingItsFile() async throws {
        try await withServe { base in
            for (mode, verdict) in [
                ("named-keep", "pass name-change-on-resume"),
                (
                    "named-follow",
                    "fail name-change-on-resume: left a partial report-1.bin (768K of 2M) beside report-2.bin"
                ),
            ] {
                let client = try await ChildProcess.start(
                    BuiltProducts.repositoryRoot + "/scripts/conformance-client",
                    [
                        "--server", base, "--client-label", mode, "--command",
                        "python3 \(TestDownloader.script) \(mode) {url} {output-dir}",
                        "--scenario", "name-change-on-resume,plain",
                    ])
                let run = try await ClientRun(client)
                #expect(run.verdicts["name-change-on-resume"] == verdict, "\(run.output)")
                // plain gives its client a name, which this command has no place for.
                #expect(run.verdicts["plain"] == "n/a  plain: the row needs a command with {output}", "\(run.output)")
            }
        }
    }

    @Test(
        "scripts/conformance-client fills its own disk as root: rangefetch passes disk-full, the next row is judged",
        .enabled(if: geteuid() == 0 && BuiltProducts.onPath("python3") != nil, "mounting needs root"))
    func pythonClientFillsItsDisk() async throws {
        let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        try await withServe { base in
            let client = try await ChildProcess.start(
                BuiltProducts.repositoryRoot + "/scripts/conformance-client",
                [
                    "--server", base, "--client-label", "rangefetch-python", "--command",
                    Self.rangefetchCommand, "--scenario", "disk-full,drop-then-resume",
                ])
            let run = try await ClientRun(client)
            #expect(run.status == 0, "\(run.output)")
            #expect(run.verdicts["disk-full"] == "pass disk-full", "\(run.output)")
            #expect(run.verdicts["drop-then-resume"] == "pass drop-then-resume", "\(run.output)")
            let cells = try await reportCells(base, client: "rangefetch-python")
            #expect(cells == ["disk-full": "pass", "drop-then-resume": "pass"], "\(cells)")
        }
        // The tmpfs was in the tester's own mount namespace, which ended with it: this one never saw it.
        #expect(try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) == mounts)
    }

    @Test("scripts/conformance-client where it cannot fill its disk: disk-full is n/a with why, and the run goes on")
    func pythonClientWithoutMounts() async throws {
        try await withServe { base in
            let client = try await ChildProcess.start(
                BuiltProducts.repositoryRoot + "/scripts/conformance-client",
                [
                    "--server", base, "--client-label", "no-mounts", "--command", Self.rangefetchCommand,
                    "--scenario", "disk-full,drop-then-resume", "--no-mounts",
                ])
            let run = try await ClientRun(client)
            #expect(run.status == 0, "\(run.output)")
            #expect(
                run.verdicts["disk-full"]
                    == "n/a  disk-full: the client did not perform the disk-full-at 2M step (disk-full-at not "
                    + "performed: --no-mounts was given)", "\(run.output)")
            #expect(run.verdicts["drop-then-resume"] == "pass drop-then-resume", "\(run.output)")
            #expect(run.output.contains("no-mounts: 1 pass, 0 corrupt, 0 unsafe, 0 fail, 0 costly, 1 n/a"))
            let cells = try await reportCells(base, client: "no-mounts")
            #expect(cells == ["disk-full": "n/a", "drop-then-resume": "pass"], "\(cells)")
        }
    }

    /// rangefetch as a tester's download command, with the flags the harness gives it.
    private static var rangefetchCommand: String {
        "\(BuiltProducts.path(of: "rangefetch")) --output {output} --state {state} --idle-timeout 5s {url}"
    }

    @Test("scripts/conformance-client: an unreachable server is one line and exit 2")
    func pythonClientUnreachable() async throws {
        let client = try await ChildProcess.start(
            BuiltProducts.repositoryRoot + "/scripts/conformance-client",
            ["--server", "http://127.0.0.1:1", "--client-label", "x", "--command", "curl -o {output} {url}"])
        let run = try await ClientRun(client)
        #expect(run.status == 2)
        #expect(client.errors.hasPrefix("conformance-client: cannot reach http://127.0.0.1:1: "), "\(client.errors)")
        #expect(client.errors.split(separator: "\n").count == 1)
    }

    @Test("urlsession-conformance: If-Range through a kill, a pause and a version change; prefill, disk-full n/a")
    func urlSessionExample() async throws {
        let example = BuiltProducts.path(of: "urlsession-conformance")
        #expect(FileManager.default.isExecutableFile(atPath: example), "build urlsession-conformance first")
        try await withServe { base in
            let client = try await ChildProcess.start(
                example,
                [
                    "--server", base, "--client-label", "urlsession-example", "--scenario",
                    "plain,kill-at-25,pause-resume,version-change,cancel,already-complete-416,disk-full",
                ])
            let run = try await ClientRun(client)
            #expect(run.status == 0, "\(run.output)")
            for scenario in ["plain", "kill-at-25", "pause-resume", "version-change", "cancel"] {
                #expect(run.verdicts[scenario] == "pass \(scenario)", "\(run.output)")
            }
            #expect(
                run.verdicts["already-complete-416"]
                    == "n/a  already-complete-416: the client did not perform the prefill 100% step", "\(run.output)")
            // An app cannot give itself a full disk: the step is not performed, never mistaken for another.
            #expect(
                run.verdicts["disk-full"] == "n/a  disk-full: the client did not perform the disk-full-at 2M step",
                "\(run.output)")
            #expect(
                run.output.contains("urlsession-example: 5 pass, 0 corrupt, 0 unsafe, 0 fail, 0 costly, 2 n/a"),
                "\(run.output)")
            let cells = try await reportCells(base, client: "urlsession-example")
            #expect(
                cells["kill-at-25"] == "pass" && cells["already-complete-416"] == "n/a" && cells["disk-full"] == "n/a",
                "\(cells)")
        }
    }
}
