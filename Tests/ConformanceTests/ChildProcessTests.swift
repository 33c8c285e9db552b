import Foundation
import TestSupport
import Testing

@testable import Conformance

/// The harness's child processes (through swift-subprocess): exit status, logs, the stderr line in reports,
/// and a kill that reaches the whole process group.
@Suite struct ChildProcessTests {
    static func makeDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "child-process-\(UInt64.random(in: 0...UInt64.max))"
        ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func exitStatusLogsAndLastErrorLine() async throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try await ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "pwd -P; echo first >&2; echo last failure >&2; exit 3"],
            directory: directory, logDirectory: directory, label: "run")
        #expect(await child.waitForExit(limit: scaled(.seconds(30))))
        #expect(child.status == 3)
        #expect(child.lastErrorLine == "last failure")
        let output = try String(contentsOfFile: directory + "/run.out", encoding: .utf8)
        #expect(output == URL(fileURLWithPath: directory).resolvingSymlinksInPath().path + "\n")
        #expect(try String(contentsOfFile: directory + "/run.err", encoding: .utf8) == "first\nlast failure\n")
    }

    @Test func aMissingProgramIsOneClearError() async throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let error = await #expect(throws: ConformanceError.self) {
            try await ChildProcess(
                executable: "/nonexistent/tool", arguments: [], directory: directory, logDirectory: directory,
                label: "missing")
        }
        #expect(error?.message.hasPrefix("cannot start /nonexistent/tool: ") == true)
        #expect(error?.message.contains("\n") == false)
    }

    @Test func killReachesTheWholeProcessGroup() async throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The shell starts a grandchild and waits; killing only the shell would leave the grandchild running.
        let child = try await ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "sleep 300 & echo $! > grandchild; wait"],
            directory: directory, logDirectory: directory, label: "group")
        // Both waits below are bounded by a deadline (30 s, stretched by the time scale).
        var grandchild: Int32?
        let written = ContinuousClock.now + scaled(.seconds(30))
        while true {
            grandchild = (try? String(contentsOfFile: directory + "/grandchild", encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard grandchild == nil, ContinuousClock.now < written else { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let pid = try #require(grandchild)
        child.kill()
        #expect(await child.waitForExit(limit: scaled(.seconds(30))))
        #expect(child.status == 128 + SIGKILL)
        // Killed, the grandchild is gone or a zombie waiting for init to reap it; never still sleeping.
        var state = Self.state(of: pid)
        let reaped = ContinuousClock.now + scaled(.seconds(30))
        while state != nil && state != "Z" && ContinuousClock.now < reaped {
            try await Task.sleep(for: .milliseconds(10))
            state = Self.state(of: pid)
        }
        #expect(state == nil || state == "Z")
    }

    @Test func captureReturnsStatusAndCombinedOutput() async throws {
        let result = try #require(
            await ChildProcess.capture(
                "/bin/sh", ["-c", "echo out; echo err >&2; exit 4"], limit: scaled(.seconds(10))))
        #expect(result.status == 4)
        #expect(result.output.contains("out\n") && result.output.contains("err\n"))
    }

    /// The process state letter from `/proc/PID/stat`, or nil when there is no such process.
    static func state(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }
}
