import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One subprocess, started with Foundation's `Process`, its output appended to log files.
///
/// Signals go to the child's PID directly (`kill(pid, SIGKILL)`), so a test can kill it the way a
/// crash or an OOM killer would.
final class ChildProcess: @unchecked Sendable {
    // `Process` is not Sendable; every access goes through this lock.
    private let process = NIOLockedValueBox<Process>(Process())
    let executable: String
    let arguments: [String]
    let stderrPath: String

    /// Starts `executable` with `arguments` in `directory`, stdout and stderr appended to `LOGS/LABEL.out|err`.
    init(executable: String, arguments: [String], directory: String, logDirectory: String, label: String) throws {
        self.executable = executable
        self.arguments = arguments
        stderrPath = "\(logDirectory)/\(label).err"
        let stdoutPath = "\(logDirectory)/\(label).out"
        for path in [stdoutPath, stderrPath] where !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        guard let stdout = FileHandle(forWritingAtPath: stdoutPath),
            let stderr = FileHandle(forWritingAtPath: stderrPath)
        else { throw ConformanceError.io("cannot open log files in \(logDirectory)") }
        stdout.seekToEndOfFile()
        stderr.seekToEndOfFile()
        var environment = ProcessInfo.processInfo.environment
        // Loopback only: a proxy from the environment would send the requests elsewhere.
        for key in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            environment[key] = nil
        }
        try process.withLockedValue { process in
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = stdout
            process.standardError = stderr
            do {
                try process.run()
            } catch {
                throw ConformanceError.clientFailed("cannot start \(executable): \(error.localizedDescription)")
            }
        }
        try? stdout.close()
        try? stderr.close()
    }

    var pid: Int32 { process.withLockedValue { $0.processIdentifier } }

    /// The exit status, or nil while running; a death by signal is `128 + signal`.
    var status: Int32? {
        process.withLockedValue { process in
            guard !process.isRunning else { return nil }
            return process.terminationReason == .uncaughtSignal
                ? 128 + process.terminationStatus : process.terminationStatus
        }
    }

    /// Sends a signal to the child.
    func signal(_ number: Int32) {
        let pid = self.pid
        if pid > 0 && status == nil { _ = kill(pid, number) }
    }

    /// Waits until the child exits, up to `limit`; returns whether it did.
    @discardableResult
    func waitForExit(limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while status == nil {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// The last non-empty line the child wrote to stderr, shortened to one report line.
    var lastErrorLine: String {
        guard let data = FileManager.default.contents(atPath: stderrPath) else { return "" }
        let text = String(decoding: data.suffix(4096), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).last { !$0.allSatisfy(\.isWhitespace) } ?? ""
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return trimmed.count > 160 ? String(trimmed.prefix(160)) + "…" : trimmed
    }

    /// Finds a program: a path containing `/` as is, otherwise the first executable match on PATH.
    static func locate(_ program: String, preferring directories: [String] = []) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in directories + path.split(separator: ":").map(String.init) where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs a program to completion with a time limit and returns its exit status and combined output
    /// (for `--help` probes); nil when it could not start or timed out (it is then killed).
    static func capture(
        _ executable: String, _ arguments: [String], limit: Duration = .seconds(10)
    ) async -> (
        status: Int32, output: String
    )? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rangecheck-probe-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil
        else { return nil }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard
            let child = try? ChildProcess(
                executable: executable, arguments: arguments, directory: directory, logDirectory: directory,
                label: "probe")
        else { return nil }
        guard await child.waitForExit(limit: limit), let status = child.status else {
            child.signal(SIGKILL)
            await child.waitForExit(limit: .seconds(5))
            return nil
        }
        let out = FileManager.default.contents(atPath: "\(directory)/probe.out") ?? Data()
        let err = FileManager.default.contents(atPath: "\(directory)/probe.err") ?? Data()
        return (status, String(decoding: out + err, as: UTF8.self))
    }
}
