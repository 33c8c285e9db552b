import Conformance
import Foundation
import RangeServer
import Subprocess
import TestSupport
import Testing

/// The runner and `rangecheck run` end to end with downloaders written for the test: a client owns its retries, every
/// column asked for runs, and stopping is clean.
@Suite(.serialized, .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
struct HarnessClientTests {
    /// Runs one pair of the catalogue against `client` on a fresh server (with the blackhole listener).
    static func run(_ scenario: String, _ client: any ClientAdapter) async throws -> MatrixCell {
        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.scenariosDirectory = "fixtures/scenarios"
        configuration.blackholePort = 0
        let entry = try #require(
            try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files").first {
                $0.name == scenario
            })
        return try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(entry, client: client, server: server, options: .forTests)
        }
    }

    @Test("a downloader that exits non-zero once on a 404 passes not-found-404, started once")
    func notFoundIsNotRerun() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await Self.run(
            "not-found-404", try SubprocessClient.command(downloader.specification("once", mode: "once")))
        #expect(cell.result == .pass)
        #expect(downloader.starts.count == 1)
        #expect(cell.notes == [])
    }

    @Test("a downloader whose connect hangs on the blackhole gives up on its own and is started once")
    func blackholeIsNotRerun() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await Self.run(
            "blackhole-direct", try SubprocessClient.command(downloader.specification("once", mode: "once")))
        #expect(cell.result == .pass)
        #expect(downloader.starts.count == 1)
    }

    @Test("an undeclared exit is final: the flaky downloader fails plain after one start")
    func undeclaredExitIsFinal() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await Self.run(
            "plain", try SubprocessClient.command(downloader.specification("flaky", mode: "flaky")))
        #expect(
            cell.result
                == .fail(
                    "client reported failure (exit 7: stopped after 64 KiB; run me again) where success was expected"))
        #expect(downloader.starts.count == 1)
    }

    @Test("a declared transient exit is re-run; the cell says so, and the re-run's request and bytes are not counted")
    func declaredExitIsRerunAndNotCounted() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let client = try SubprocessClient.command(downloader.specification("flaky", mode: "flaky"), transient: [7])
        let cell = try await Self.run("plain", client)
        // plain allows 1 request and 0 bytes fetched twice: the re-run's GET from 0 would break both.
        #expect(cell.result == .pass)
        #expect(downloader.starts.count == 2)
        let note = try #require(cell.notes.first)
        #expect(note.hasPrefix("re-run 1 time by the harness (after exit 7): 1 request and "), "\(cell.notes)")
        #expect(note.hasSuffix(" not counted against the bounds"))
        let requests = try #require(cell.trace?.requests)
        #expect(requests.map(\.launchLabel) == ["1", "2 (harness re-run)"])
    }

    @Test("--client X --client-command 'Y=...' runs both columns; naming Y with --client too runs it once")
    func everyColumnAskedForRuns() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let json = downloader.directory + "/matrix.json"
        let both = try await ChildProcess.start(
            BuiltProducts.rangecheck,
            [
                "--client", "engine", "--client-command", downloader.specification("careful", mode: "once"),
                "--scenario", "plain", "--json", json, "--quiet",
            ])
        #expect(await both.wait(limit: .seconds(120)) == .exited(0), "\(both.errors)")
        #expect(both.output.hasPrefix("columns: engine, careful\n"), "\(both.output)")
        var document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        #expect(document["clients"] as? [String] == ["engine", "careful"])
        #expect((document["cells"] as? [[String: Any]])?.map { $0["result"] as? String } == ["pass", "pass"])
        #expect(downloader.starts.count == 1)

        // The action's shape: the command's column named with --client as well.
        let named = try await ChildProcess.start(
            BuiltProducts.rangecheck,
            [
                "--client-command", downloader.specification("careful", mode: "once"), "--client", "careful",
                "--scenario", "plain", "--json", json, "--quiet",
            ])
        #expect(await named.wait(limit: .seconds(120)) == .exited(0), "\(named.errors)")
        document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        #expect(document["clients"] as? [String] == ["careful"])
        #expect((document["cells"] as? [[String: Any]])?.count == 1)
        #expect(downloader.starts.count == 2)
    }

    @Test("run --help is pinned: a changed interface is a visible change (fixtures/cli/rangecheck-run-help.txt)")
    func helpIsPinned() async throws {
        let child = try await ChildProcess.start(BuiltProducts.rangecheck, ["run", "--help"])
        #expect(await child.wait() == .exited(0))
        let pinned = try String(contentsOfFile: repositoryPath("fixtures/cli/rangecheck-run-help.txt"), encoding: .utf8)
        #expect(child.output == pinned)
    }

    @Test("a --client or --transient that names nothing is a one-line usage error (64)")
    func unknownNamesAreUsageErrors() async throws {
        let cases: [([String], String)] = [
            (["--client", "nope"], "unknown client 'nope'"),
            (["--transient", "nope=7"], "--transient nope: no --client-command named 'nope'"),
            (["--transient", "curl=7"], "a known client's transient exits are in its definition (fixtures/clients)"),
            (["--client-dir", "/nonexistent"], "cannot read the client definitions in /nonexistent"),
            (["--client-command", "t=tool {url}", "--transient", "t=0"], "'0' is not an exit status from 1 to 255"),
        ]
        for (arguments, fragment) in cases {
            let child = try await ChildProcess.start(BuiltProducts.rangecheck, arguments + ["--list"])
            #expect(await child.wait(limit: .seconds(60)) == .exited(64), "\(arguments)")
            #expect(child.errors.contains(fragment), "\(arguments): \(child.errors)")
        }
    }

    /// How a test stops `rangecheck run`: the signal sent, and whether the run was given `--keep`.
    struct Stop: Sendable, CustomTestStringConvertible {
        var signal: Int32
        var keep = false

        var name: String { signal == SIGINT ? "SIGINT" : "SIGTERM" }
        var testDescription: String { name + (keep ? " with --keep" : "") }
    }

    @Test(
        "SIGTERM or SIGINT to rangecheck run: no client left, interrupted reports, exit 130; with --keep the pair directories stay, the cut-short one named",
        arguments: [Stop(signal: SIGTERM), Stop(signal: SIGINT), Stop(signal: SIGINT, keep: true)])
    func stoppingIsClean(_ stop: Stop) async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let temporary = downloader.directory + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let reports = downloader.directory + "/reports"
        let child = try await ChildProcess.start(
            BuiltProducts.rangecheck,
            [
                "--client", "engine", "--client-command", downloader.specification("hanger", mode: "hang"),
                "--scenario", "plain", "--json", reports + "/m.json", "--markdown", reports + "/m.md",
                "--junit", reports + "/m.xml", "--html", reports + "/m.html",
            ] + (stop.keep ? ["--keep"] : []),
            environment: .inherit.updating(["TMPDIR": temporary]))
        // engine's pair runs first; the hanging client's pair then waits for the signal. Looked for until a deadline
        // (60 s, stretched by the time scale: engine's pair runs instrumented too).
        let deadline = ContinuousClock.now + scaled(.seconds(60))
        while (downloader.starts.isEmpty || !FileManager.default.fileExists(atPath: downloader.log + ".child"))
            && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(100))
        }
        let leader = try #require(downloader.starts.first, "the hanging client never started: \(child.errors)")
        let grandchild = try #require(
            Int32(
                ((try? String(contentsOfFile: downloader.log + ".child", encoding: .utf8)) ?? "")
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(Self.groupMembers(leader).contains(grandchild))
        child.send(stop.signal)
        #expect(await child.wait(limit: .seconds(60)) == .exited(130), "\(child.errors)")
        #expect(Self.groupMembers(leader) == [], "the client's process group outlived rangecheck")
        #expect(!Self.isAlive(leader) && !Self.isAlive(grandchild))
        let interrupted = "interrupted by \(stop.name) after 1 of 2 pairs"
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary).sorted()
        if stop.keep {
            // Both pairs' directories stay; the one of the pair cut short, which no cell names, is named after the
            // count, with its client's logs and the run's journal.
            #expect(left.count == 2 && left.allSatisfy { $0.hasPrefix("rangecheck.") }, "\(left)")
            let marker = "\(interrupted); plain × hanger cut short, its directory is kept in "
            let kept = try #require(
                child.output.components(separatedBy: marker).dropFirst().first?.components(separatedBy: "; ").first,
                "\(child.output)")
            #expect(left.contains((kept as NSString).lastPathComponent), "\(kept) is not one of \(left)")
            #expect(FileManager.default.fileExists(atPath: kept + "/journal.jsonl"))
            let logs = (try? FileManager.default.contentsOfDirectory(atPath: kept + "/logs")) ?? []
            #expect(logs.contains { $0.hasPrefix("hanger-") }, "\(logs)")
        } else {
            #expect(left == [])
        }
        #expect(child.output.contains("INTERRUPTED: \(interrupted)"), "\(child.output)")
        #expect(child.output.contains("engine: 1 pass, "))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reports + "/m.json")))
                as? [String: Any])
        let interruption = try #require(document["interruption"] as? String)
        #expect(stop.keep ? interruption.hasPrefix(interrupted + "; ") : interruption == interrupted, "\(interruption)")
        #expect((document["cells"] as? [[String: Any]])?.count == 1)
        for file in ["m.md", "m.xml", "m.html"] {
            let text = try String(contentsOfFile: reports + "/" + file, encoding: .utf8)
            #expect(text.contains(interrupted), "\(file)")
        }
        #expect(downloader.starts.count == 1)
    }

    /// The live (not zombie) processes whose process group is `group`, from /proc.
    static func groupMembers(_ group: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // After "pid (comm) ": state, ppid, pgrp.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && fields[0] != "Z" && Int32(fields[2]) == group
        }.sorted()
    }

    /// Whether `pid` is a live process (a zombie waiting to be reaped is not).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }
}
