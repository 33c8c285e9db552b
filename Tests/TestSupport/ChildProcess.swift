import Foundation
import Subprocess

/// A program run as a child process through swift-subprocess, for the test targets (one copy for all of them): stdout and stderr are collected in
/// memory (a test's output is small), signals go to the child, and waiting is woken by what it waits for
/// (output, exit), not by polling.
public final class ChildProcess: @unchecked Sendable {
    private typealias Running = Execution<NoInput, SequenceOutput, SequenceOutput>
    private typealias Waiter = (isReady: () -> Bool, continuation: CheckedContinuation<Bool, Never>)

    // NSLock rather than Synchronization.Mutex: ThreadSanitizer sees it (docs/reliability.md). It guards
    // every stored property below.
    private let lock = NSLock()
    /// Set while the child's output is read, which is until it exits: swift-subprocess reaps it only later.
    private var execution: Running?
    private var outputBytes: [UInt8] = []
    private var errorBytes: [UInt8] = []
    private var termination: TerminationStatus?
    private var waiters: [Int: Waiter] = [:]
    private var nextWaiter = 0
    private var task: Task<Void, Never>?

    private init() {}

    /// Starts `executable` with `arguments`.
    ///
    /// - Throws: swift-subprocess's error when the program cannot be started.
    public static func start(
        _ executable: String, _ arguments: [String], directory: String? = nil,
        environment: Environment = .inherit
    ) async throws -> ChildProcess {
        let child = ChildProcess()
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
            let task = Task {
                await child.run(
                    executable, arguments, directory: directory, environment: environment, started: started)
            }
            child.lock.withLock { child.task = task }
        }
        return child
    }

    private func run(
        _ executable: String, _ arguments: [String], directory: String?, environment: Environment,
        started: CheckedContinuation<Void, any Error>
    ) async {
        var spawned = false
        do {
            let result = try await Subprocess.run(
                .path(.init(executable)), arguments: Arguments(arguments), environment: environment,
                workingDirectory: directory.map { .init($0) }, input: .none, output: .sequence, error: .sequence
            ) { execution in
                update { $0.execution = execution }
                spawned = true
                started.resume()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.collect(execution.standardOutput, isError: false) }
                    group.addTask { await self.collect(execution.standardError, isError: true) }
                }
                update { $0.execution = nil }
            }
            update { $0.termination = result.terminationStatus }
        } catch {
            guard spawned else { return started.resume(throwing: error) }
            update { child in
                child.errorBytes += Array("test: lost the child: \(error)\n".utf8)
                child.termination = .exited(-1)
            }
        }
    }

    private func collect(_ stream: SubprocessOutputSequence, isError: Bool) async {
        do {
            for try await buffer in stream {
                let bytes = buffer.withUnsafeBytes { Array($0) }
                update { child in
                    if isError { child.errorBytes += bytes } else { child.outputBytes += bytes }
                }
            }
        } catch {
            // A read error ends the collection; the exit status still arrives.
        }
    }

    /// Changes the state under the lock, then wakes the waiters whose condition now holds.
    private func update(_ change: (ChildProcess) -> Void) {
        let ready: [CheckedContinuation<Bool, Never>] = lock.withLock {
            change(self)
            let ids = waiters.filter { $0.value.isReady() }.map(\.key)
            return ids.compactMap { waiters.removeValue(forKey: $0)?.continuation }
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Waits until `isReady` (evaluated under the lock) holds, up to `limit` stretched by the time scale
    /// (`scaled`); returns whether it did.
    private func wait(limit: Duration, until isReady: @escaping () -> Bool) async -> Bool {
        let limit = scaled(limit)
        let id = lock.withLock {
            nextWaiter += 1
            return nextWaiter
        }
        let timer = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            lock.withLock { waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let readyNow = lock.withLock {
                if isReady() { return true }
                waiters[id] = (isReady, continuation)
                return false
            }
            if readyNow { continuation.resume(returning: true) }
        }
    }

    /// The child's process ID while it runs (until it has closed its output), else `nil`.
    public var processIdentifier: Int32? {
        lock.withLock { execution.map { Int32($0.processIdentifier.value) } }
    }

    /// Whether the child has exited (and been reaped).
    public var hasExited: Bool { lock.withLock { termination != nil } }

    /// Sends `signal` to the child (nothing once it has closed its output: it is exiting).
    public func send(_ signal: Int32) {
        lock.withLock { _ = try? execution?.send(signal: Signal(rawValue: signal)) }
    }

    /// Waits for the child to exit, up to `limit` (stretched by the time scale, as every limit here is); one still
    /// running then is killed (swift-subprocess's teardown) and nil is returned.
    public func wait(limit: Duration = .seconds(60)) async -> TerminationStatus? {
        if await wait(limit: limit, until: { self.termination != nil }) {
            return lock.withLock { termination }
        }
        lock.withLock { task }?.cancel()
        _ = await wait(limit: .seconds(30)) { self.termination != nil }
        return nil
    }

    /// The first line the child wrote to stdout (without its newline): waits for it, up to `limit` (scaled), or
    /// returns what there is once the child has exited.
    public func firstLine(limit: Duration = .seconds(30)) async -> String {
        _ = await wait(limit: limit) { self.outputBytes.contains(10) || self.termination != nil }
        let bytes = lock.withLock { outputBytes }
        return String(decoding: bytes.prefix { $0 != 10 }, as: UTF8.self)
    }

    /// The first `count` lines the child wrote to stdout (without their newlines): waits for them, up to `limit`
    /// (scaled), or returns the complete lines there are once the child has exited.
    public func lines(_ count: Int, limit: Duration = .seconds(30)) async -> [String] {
        _ = await wait(limit: limit) { self.outputBytes.count { $0 == 10 } >= count || self.termination != nil }
        let complete = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        return complete.prefix(count).map(String.init)
    }

    /// Everything the child wrote to stdout so far.
    public var output: String { String(decoding: lock.withLock { outputBytes }, as: UTF8.self) }

    /// Everything the child wrote to stderr so far.
    public var errors: String { String(decoding: lock.withLock { errorBytes }, as: UTF8.self) }

    /// An exit status as a shell reports it: the code, or `128 + N` for a death by signal N.
    public static func code(_ status: TerminationStatus) -> Int32 {
        switch status {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }
}
