import Foundation
import NIOConcurrencyHelpers
import Subprocess

/// One client program run through swift-subprocess in a process group of its own, its stdout and stderr
/// appended to `LOGS/LABEL.out` and `LOGS/LABEL.err`.
///
/// A kill goes to the whole group, so what a wrapper script started dies with it, the way a crash or an OOM
/// killer would end it. The exit is reported when swift-subprocess reaps the child, not by polling.
final class ChildProcess: Sendable {
    typealias Running = Execution<NoInput, SequenceOutput, SequenceOutput>

    private struct State {
        /// Set while the child's output is being read: until then swift-subprocess has not reaped it, so its
        /// PID (and the group named after it) cannot have been reused.
        var execution: Running?
        var status: Int32?
        var errorTail: [UInt8] = []
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter = 0
    }

    /// How much of stderr is kept in memory, for `lastErrorLine`; the log file has all of it.
    static let errorTailSize = 4096

    let executable: String
    let arguments: [String]
    let environment: Environment
    private let state = NIOLockedValueBox(State())
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// Starts `executable` with `arguments` in `directory`, stdout and stderr appended to `LOGS/LABEL.out|err`.
    ///
    /// The environment is the harness's (``loopbackEnvironment``) with `environment` added.
    ///
    /// - Throws: `ConformanceError.io` when the log files cannot be opened, `.clientFailed` when the program
    ///   cannot be started.
    init(
        executable: String, arguments: [String], environment: [String: String] = [:], directory: String,
        logDirectory: String, label: String
    ) async throws {
        self.executable = executable
        self.arguments = arguments
        self.environment = Self.loopbackEnvironment.updating(
            Dictionary(
                uniqueKeysWithValues: environment.map {
                    (Environment.Key(stringLiteral: $0.key), String?.some($0.value))
                }))
        let logs = ["out", "err"].map { suffix -> (path: String, handle: FileHandle?) in
            let path = "\(logDirectory)/\(label).\(suffix)"
            if !FileManager.default.fileExists(atPath: path) {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
            }
            let handle = FileHandle(forWritingAtPath: path)
            handle?.seekToEndOfFile()
            return (path, handle)
        }
        guard let out = logs[0].handle, let err = logs[1].handle else {
            for log in logs { try? log.handle?.close() }
            throw ConformanceError.io("cannot open \(logs.first { $0.handle == nil }?.path ?? logDirectory)")
        }
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
            let task = Task {
                await self.run(in: directory, logs: (out, err), started: started)
                try? out.close()
                try? err.close()
            }
            self.task.withLockedValue { $0 = task }
        }
    }

    private func run(
        in directory: String, logs: (out: FileHandle, err: FileHandle), started: CheckedContinuation<Void, any Error>
    ) async {
        var spawned = false
        let status: Int32
        do {
            let result = try await Subprocess.run(
                .path(.init(executable)), arguments: Arguments(arguments), environment: environment,
                workingDirectory: .init(directory), platformOptions: Self.ownProcessGroup, input: .none,
                output: .sequence, error: .sequence
            ) { execution in
                state.withLockedValue { $0.execution = execution }
                spawned = true
                started.resume()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await Self.copy(execution.standardOutput, to: logs.out, keepingTailIn: nil) }
                    group.addTask { await Self.copy(execution.standardError, to: logs.err, keepingTailIn: self) }
                }
                state.withLockedValue { $0.execution = nil }
            }
            status = Self.code(result.terminationStatus)
        } catch {
            guard spawned else {
                started.resume(throwing: ConformanceError.clientFailed("cannot start \(executable): \(error)"))
                return
            }
            // Spawned, then lost (the process monitor failed): report it as a failed run, never as a hang.
            keepTail(Array("rangecheck: lost track of \(executable): \(error)\n".utf8))
            status = -1
        }
        let waiters = state.withLockedValue { state in
            state.execution = nil
            state.status = status
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// The exit status, or nil while running; a death by signal N is `128 + N`, as a shell reports it.
    var status: Int32? { state.withLockedValue { $0.status } }

    /// Sends a signal to the child's process group (nothing once its output is closed: it is exiting).
    func signal(_ number: Int32) {
        state.withLockedValue { state in
            _ = try? state.execution?.send(signal: Signal(rawValue: number), toProcessGroup: true)
        }
    }

    /// Kills the child's process group with SIGKILL. A child that closed its output but lives on is reached
    /// through cancellation: swift-subprocess then runs the teardown sequence, which kills the group too.
    func kill() {
        let sent = state.withLockedValue { state in
            (try? state.execution?.send(signal: .kill, toProcessGroup: true)) != nil
        }
        if !sent { task.withLockedValue { $0 }?.cancel() }
    }

    /// Waits until the child exits, up to `limit`; returns whether it did.
    @discardableResult
    func waitForExit(limit: Duration) async -> Bool {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let exited = state.withLockedValue { state in
                if state.status == nil { state.waiters[id] = continuation }
                return state.status != nil
            }
            if exited { continuation.resume(returning: true) }
        }
    }

    /// The last non-empty line the child wrote to stderr, shortened to one report line.
    var lastErrorLine: String {
        let text = String(decoding: state.withLockedValue { $0.errorTail }, as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).last { !$0.allSatisfy(\.isWhitespace) } ?? ""
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return trimmed.count > 160 ? String(trimmed.prefix(160)) + "…" : trimmed
    }

    private func keepTail(_ bytes: [UInt8]) {
        state.withLockedValue { state in
            state.errorTail.append(contentsOf: bytes)
            if state.errorTail.count > Self.errorTailSize {
                state.errorTail.removeFirst(state.errorTail.count - Self.errorTailSize)
            }
        }
    }

    private static func copy(
        _ output: SubprocessOutputSequence, to log: FileHandle, keepingTailIn child: ChildProcess?
    ) async {
        do {
            for try await buffer in output {
                let bytes = buffer.withUnsafeBytes { Array($0) }
                log.write(Data(bytes))
                child?.keepTail(bytes)
            }
        } catch {
            // A read error ends the copy; the exit status still arrives.
        }
    }

    /// Runs a program to completion with a time limit and returns its exit status and combined output (for
    /// `--help` probes, a definition's build step); nil when it could not start, wrote more than 1 MiB or timed out
    /// (its group is then killed by swift-subprocess's teardown). The environment is the harness's loopback one
    /// unless given (a build that installs from PyPI keeps the user's proxy).
    static func capture(
        _ executable: String, _ arguments: [String], limit: Duration = .seconds(10),
        environment: Environment = loopbackEnvironment
    ) async -> (status: Int32, output: String)? {
        let run = Task {
            try await Subprocess.run(
                .path(.init(executable)), arguments: Arguments(arguments), environment: environment,
                platformOptions: ownProcessGroup, output: .string(limit: 1 << 20), error: .combinedWithOutput)
        }
        let timedOut = NIOLockedValueBox(false)
        let timer = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            timedOut.withLockedValue { $0 = true }
            run.cancel()
        }
        defer { timer.cancel() }
        guard let result = try? await run.value, !timedOut.withLockedValue({ $0 }) else { return nil }
        return (code(result.terminationStatus), result.standardOutput)
    }

    /// The harness's environment without proxy variables: loopback only, a proxy would send the requests
    /// elsewhere.
    static let loopbackEnvironment = Environment.inherit.updating(
        Dictionary(
            uniqueKeysWithValues: ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
                .map { (Environment.Key(stringLiteral: $0), String?.none) }))

    /// A process group of the child's own (`setpgid(0, 0)`), killed as a whole when a run is cancelled.
    static let ownProcessGroup: PlatformOptions = {
        var options = PlatformOptions()
        options.processGroupID = 0
        options.teardownSequence = [.send(signal: .kill, toProcessGroup: true, allowedDurationToNextStep: .seconds(1))]
        return options
    }()

    /// An exit status as a shell reports it: the code, or `128 + N` for a death by signal N.
    static func code(_ status: TerminationStatus) -> Int32 {
        switch status {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }
}
