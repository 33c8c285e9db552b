import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The `rangefetch` binary built next to the test bundle.
let rangefetchPath: String = {
    var candidates: [String] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append((exe as NSString).deletingLastPathComponent)
    }
    candidates.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent)
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
    for directory in candidates where FileManager.default.isExecutableFile(atPath: directory + "/rangefetch") {
        return directory + "/rangefetch"
    }
    return candidates[0] + "/rangefetch"
}()

/// A running `rangefetch` child; its stdout and stderr are also written to `LOGS.out|err` once it exits.
struct Child {
    let process: ChildProcess
    let logs: String

    /// Starts `rangefetch`; with `fileSizeLimit`, under `/bin/sh -c 'ulimit -f BLOCKS'`, so every file it
    /// writes is limited to that many 512-byte blocks (`/bin/sh` counts 512-byte blocks: dash, and bash in
    /// POSIX mode).
    static func start(_ arguments: [String], logs: String, fileSizeLimit blocks: Int? = nil) async throws -> Child {
        let process =
            if let blocks {
                try await ChildProcess.start(
                    "/bin/sh", ["-c", "ulimit -f \(blocks) && exec \"$0\" \"$@\"", rangefetchPath] + arguments)
            } else {
                try await ChildProcess.start(rangefetchPath, arguments)
            }
        return Child(process: process, logs: logs)
    }

    /// Waits for the child to exit, up to `timeout` stretched by the time scale, and returns its status as a shell
    /// reports it (`128 + N` for signal N).
    func wait(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let status = await process.wait(limit: timeout)
        try? Data(output.utf8).write(to: URL(fileURLWithPath: logs + ".out"))
        try? Data(errors.utf8).write(to: URL(fileURLWithPath: logs + ".err"))
        guard let status else {
            Issue.record("rangefetch did not exit in time")
            return -1
        }
        return ChildProcess.code(status)
    }

    var output: String { process.output }
    var errors: String { process.errors }
}

/// Sends SIGKILL to `child` the moment `condition` holds, polling on a thread of its own: the test's cooperative
/// threads can be busy for seconds when the whole suite runs on two cores, and a kill that lands late would miss
/// the download it was meant to interrupt.
///
/// - Returns: whether the condition held (and the kill was sent) within `seconds` (stretched by the time scale).
func kill(_ child: Child, within seconds: Double, when condition: @escaping @Sendable () -> Bool) async -> Bool {
    await withCheckedContinuation { continuation in
        Thread {
            let deadline = Date().addingTimeInterval(scaled(seconds: seconds))
            while Date() < deadline {
                if condition() {
                    child.process.send(SIGKILL)
                    continuation.resume(returning: true)
                    return
                }
                usleep(2_000)
            }
            continuation.resume(returning: false)
        }.start()
    }
}

/// The partial files in a state directory.
func partialFiles(_ state: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: state)) ?? []).filter { $0.hasSuffix(".part") }.map {
        state + "/" + $0
    }
}

@Suite("rangefetch executable", .serialized)
struct CLITests {
    @Test("2. kill -9 at several offsets, then a restart finishes with the right SHA-256")
    func killNineAndResume() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: rangefetchPath), "missing \(rangefetchPath)")
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let size = 4 << 20
            let digest = expectedSHA256(size: size, seed: 101)
            // 512 KiB/s: a loaded clean-clone CI run's kill at 1.5 MB landed so late at 2 MiB/s that the last round
            // could not grow 64 KiB past it before the end of the file, and at 1 MiB/s (the next CI run) the last
            // round's file was complete before its kill; at 512 KiB/s each round has several seconds.
            let path = "/bytes/4M?seed=101&rate=\(paced(512))"
            let arguments = [server.baseURL + path, "-o", dir + "/out.bin", "--json", "--sha256", digest]
            var killedAt: [Int64] = []
            for (round, offset) in [Int64(300_000), 1_500_000, 2_800_000].enumerated() {
                // Requiring fresh growth in every round keeps one request per round, which the journal checks
                // below rely on, even if a kill lands late and overshoots the next offset.
                let start = partialFiles(dir + "/.rangefetch").first.flatMap(fileSize) ?? 0
                let child = try await Child.start(arguments, logs: dir + "/run\(round)")
                let state = dir + "/.rangefetch"
                let killed = await kill(child, within: 60) {
                    partialFiles(state).contains {
                        let size = fileSize($0) ?? 0
                        return size >= offset && size >= start + 65_536
                    }
                }
                try #require(killed, "the partial file never passed \(offset)")
                let status = try await child.wait()
                #expect(status == 128 + SIGKILL)
                let partial = try #require(partialFiles(dir + "/.rangefetch").first)
                killedAt.append(fileSize(partial) ?? 0)
            }
            let last = try await Child.start(arguments, logs: dir + "/final")
            #expect(try await last.wait() == 0, "\(last.errors)")
            #expect(try sha256(ofFile: dir + "/out.bin") == digest)
            #expect(partialFiles(dir + "/.rangefetch").isEmpty)
            #expect(last.output.contains("\"event\":\"completed\""))

            // The journal: each restart asked from the partial file's actual length, and at most one write
            // buffer per kill was fetched twice.
            // A killed client's paced response is journalled once the server's next write fails: waited for as the
            // journal settles.
            let gets = await settledRequests(server, path, timeout: .seconds(15)).sorted { $0.seq < $1.seq }
            try #require(
                gets.count == 4,
                "\(gets.map { ($0.requestHeaders["range"] ?? "-", $0.status, $0.bodyBytesSent, $0.outcome.rawValue) })")
            #expect(gets[0].requestHeaders["range"] == nil)
            for (index, resumedFrom) in killedAt.enumerated() {
                let next = gets[index + 1]
                #expect(next.requestHeaders["range"] == "bytes=\(resumedFrom)-")
                #expect(next.requestHeaders["if-range"] == gets[0].responseHeaders["etag"])
                let previousStart = index == 0 ? Int64(0) : killedAt[index - 1]
                let reached = previousStart + Int64(gets[index].bodyBytesSent)
                #expect(
                    reached - resumedFrom <= 1 << 20, "refetched \(reached - resumedFrom) bytes after kill \(index)")
            }
        }
    }

    @Test("Ctrl-C pauses cleanly with exit code 130; the rerun resumes")
    func interruptPausesAndResumes() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let url = server.baseURL + "/bytes/2M?seed=102&rate=\(paced(2048))"
            let child = try await Child.start([url, "-o", dir + "/i.bin"], logs: dir + "/int")
            try await eventually(.seconds(20), "partial bytes") {
                partialFiles(dir + "/.rangefetch").contains { (fileSize($0) ?? 0) >= 300_000 }
            }
            child.process.send(SIGINT)
            #expect(try await child.wait() == 130)
            #expect(!child.errors.contains("Fatal"))
            let records = try FileManager.default.contentsOfDirectory(atPath: dir + "/.rangefetch").filter {
                $0.hasSuffix(".json")
            }
            let record = try String(contentsOfFile: dir + "/.rangefetch/" + records[0], encoding: .utf8)
            #expect(record.contains("\"state\" : \"paused\""))
            let rerun = try await Child.start([url, "-o", dir + "/i.bin"], logs: dir + "/int2")
            #expect(try await rerun.wait() == 0)
            #expect(try sha256(ofFile: dir + "/i.bin") == expectedSHA256(size: 2 << 20, seed: 102))
            #expect(await settledRequests(server, "/bytes/2M?seed=102").last?.requestHeaders["range"] != nil)
        }
    }

    @Test("bad input: one clear line on stderr and a documented exit code")
    func badInputExitCodes() async throws {
        let dir = makeTemporaryDirectory()
        let scheme = try await Child.start(["ftp://example.com/x", "-o", dir + "/x"], logs: dir + "/ftp")
        #expect(try await scheme.wait() == 64)
        #expect(scheme.errors.split(separator: "\n").count == 1)
        #expect(scheme.errors.contains("unsupported URL scheme"))

        let usage = try await Child.start(["--concurrency", "0", "http://127.0.0.1:1/x"], logs: dir + "/usage")
        #expect(try await usage.wait() == 64)

        // The URLs after the first bypass the argument parser; the command is still validated with all of them.
        let digestForTwo = try await Child.start(
            ["http://127.0.0.1:1/x", "--sha256", String(repeating: "a", count: 64), "http://127.0.0.1:1/y"],
            logs: dir + "/two")
        #expect(try await digestForTwo.wait() == 64)
        #expect(digestForTwo.errors.contains("exactly one URL"))

        for other in [["--sha256", String(repeating: "a", count: 64)], ["--checksums", "/dev/null"]] {
            let conflict = try await Child.start(
                ["--no-digest"] + other + ["http://127.0.0.1:1/x", "-o", dir + "/c"], logs: dir + "/no-digest")
            #expect(try await conflict.wait() == 64)
            #expect(conflict.errors.split(separator: "\n").count == 1)
            #expect(conflict.errors.contains("--no-digest") && conflict.errors.contains(other[0]))
        }

        let unwritable = try await Child.start(
            ["http://127.0.0.1:1/x", "-o", "/proc/nope/x"], logs: dir + "/unwritable")
        #expect(try await unwritable.wait() == 1)
        #expect(unwritable.errors.split(separator: "\n").count == 1)

        try await withRangeServer(fixturesServerConfiguration) { server in
            let missing = try await Child.start([server.baseURL + "/files/nope", "-o", dir + "/n"], logs: dir + "/404")
            #expect(try await missing.wait() == 2)
            let wrong = try await Child.start(
                [server.baseURL + "/bytes/1K", "-o", dir + "/w", "--sha256", String(repeating: "a", count: 64)],
                logs: dir + "/sha")
            #expect(try await wrong.wait() == 3)
            let busy = try await Child.start(
                [server.baseURL + "/bytes/1K?status=503", "-o", dir + "/b", "--retries", "1"], logs: dir + "/503")
            #expect(try await busy.wait() == 4)
            #expect(!busy.errors.contains("Fatal") && !missing.errors.contains("Fatal"))
        }
    }

    @Test("8. --checksums verifies several URLs into a directory, -j 2")
    func checksumsFile() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let sums = """
                \(expectedSHA256(size: 1024, seed: 0))  1K
                \(String(repeating: "b", count: 64)) *2K
                """
            try Data(sums.utf8).write(to: URL(fileURLWithPath: dir + "/SHA256SUMS"))
            let child = try await Child.start(
                [
                    server.baseURL + "/bytes/1K", server.baseURL + "/bytes/2K", "-o", dir + "/out", "-j", "2",
                    "--checksums", dir + "/SHA256SUMS", "--json",
                ], logs: dir + "/sums")
            #expect(try await child.wait() == 3)
            #expect(try sha256(ofFile: dir + "/out/1K") == expectedSHA256(size: 1024, seed: 0))
            #expect(!FileManager.default.fileExists(atPath: dir + "/out/2K"))
            #expect(child.output.contains("\"kind\":\"verification-failed\""))
            // The failure also reaches stderr, as one line naming the URL; the download that worked says nothing.
            let errorLines = child.errors.split(separator: "\n")
            #expect(errorLines.count == 1, "stderr: \(child.errors)")
            #expect(errorLines.first?.hasPrefix("rangefetch: " + server.baseURL + "/bytes/2K: ") == true)
            // Every line is one JSON object (the lines are written by hand, not by JSONSerialization).
            let lines = child.output.split(separator: "\n")
            #expect(lines.count >= 8)
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["event"] is String && object?["id"] is String, "\(line)")
            }
            let completed = lines.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["event"] as? String == "completed" }
            #expect(completed?["sha256"] as? String == expectedSHA256(size: 1024, seed: 0))
            #expect(completed?["path"] as? String == dir + "/out/1K")
            #expect((completed?["bytes"] as? NSNumber)?.intValue == 1024)
        }
    }

    @Test("URLs among options and after -- all download, in command-line order")
    func urlsAmongOptions() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let names = ["1K", "3K", "2K", "4K"]
            let child = try await Child.start(
                [
                    server.baseURL + "/bytes/1K", "-j", "1", server.baseURL + "/bytes/3K", "-o", dir + "/out",
                    "--json", server.baseURL + "/bytes/2K", "--", server.baseURL + "/bytes/4K",
                ], logs: dir + "/order")
            #expect(try await child.wait() == 0)
            for name in names { #expect(fileSize(dir + "/out/" + name) == Int64(name.dropLast())! << 10) }
            // With one transfer at a time the downloads complete in the order they were given.
            let completed = child.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["event"] as? String == "completed" }.compactMap { $0["path"] as? String }
            #expect(completed == names.map { dir + "/out/" + $0 })
        }
    }

    @Test("--help is pinned: a changed interface is a visible change (fixtures/cli/rangefetch-help.txt)")
    func helpIsPinned() async throws {
        let dir = makeTemporaryDirectory()
        let help = try await Child.start(["--help"], logs: dir + "/help")
        #expect(try await help.wait() == 0)
        let pinned = try String(
            contentsOfFile: URL(fileURLWithPath: fixturesRoot).deletingLastPathComponent()
                .appendingPathComponent("cli/rangefetch-help.txt").path,
            encoding: .utf8)
        #expect(help.output == pinned)
        // The options scripts and docs rely on, named so a failure says which went missing.
        for line in [
            "-o, --output <output>", "--state <state>", "-j, --concurrency <concurrency>",
            "-x, --connections <connections>", "-H, --header <header>", "--proxy <url>", "--wait-lock",
            "0    every download completed and verified", "64   usage error", "130  interrupted",
        ] {
            #expect(help.output.contains(line), "help lacks: \(line)")
        }
    }
}

@Suite("Throughput")
struct ThroughputTests {
    @Test("256 MiB /bytes resource, whole digest checked (no timing assertions)")
    func largeDownload() async throws {
        try await withEngine(testConfiguration()) { server, engine, dir in
            let size = 256 << 20
            let id = try await engine.add(
                .init(url: server.baseURL + "/bytes/256M?seed=200", destination: dir + "/big"))
            let started = ContinuousClock.now
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            guard case .completed(_, let sha256, let bytes) = result else {
                Issue.record("expected completion, got \(result)")
                return
            }
            #expect(bytes == Int64(size))
            #expect(sha256 == expectedSHA256(size: size, seed: 200))
            #expect(fileSize(dir + "/big") == Int64(size))
            print("throughput: 256 MiB in \(elapsed)")
            try? FileManager.default.removeItem(atPath: dir + "/big")
        }
    }
}
