import Foundation
import NIOConcurrencyHelpers

/// A downloader run as a subprocess, once per start (the first, and each restart a scenario step makes); re-run
/// only after an exit status its definition declares transient (`transientExitCodes`), the way a user's script
/// would (`until tool ...; do sleep 1; done`, bounded by the job's `attempts`). Every launch is recorded with its
/// reason (``ClientRun/launches``), so the judge can leave the re-runs' requests out of the bounds.
///
/// The concrete columns (`curl`, `wget`, `aria2c`, `rangefetch`, `command`) are values of this type,
/// built by the factories in `Clients+Subprocess.swift`.
public struct SubprocessClient: ClientAdapter {
    /// The column name.
    public let name: String
    /// The program, by name (looked up on PATH) or path.
    public let program: String
    /// Directories searched before PATH (for `rangefetch`: the directory of `rangecheck` itself).
    public let preferredDirectories: [String]
    /// The supported steps.
    public let capabilities: ClientCapabilities
    /// The invocation, for reports.
    public let invocation: String
    /// Exit statuses after which the harness runs the program again (up to the job's `attempts` runs per start);
    /// every other exit is final. A built-in's are those its own documentation calls transient
    /// (docs/conformance.md); a `--client-command`'s are declared with `--transient NAME=CODES`, none by default.
    public let transientExitCodes: Set<Int32>
    /// The exit status the program uses for "interrupted, run me again to resume" after SIGINT, if any.
    public let pausedExitCode: Int32?
    /// Builds the argument list (without the program) for a job; writes nothing (files it names come from
    /// `inputFiles`).
    public let arguments: @Sendable (ClientJob) throws -> [String]
    /// Files the program reads that are written before each launch (aria2c's input list), contents by path.
    public let inputFiles: @Sendable (ClientJob) -> [String: String]
    /// Checks that the program found is the real one (e.g. not a placeholder build); returns why not.
    public let probe: (@Sendable (String) async -> String?)?
    /// Makes the program before it is looked for (a definition's build step), once; returns why it could not.
    public let prepare: (@Sendable () async -> String?)?
    /// The file a finished build leaves, for a program a build step makes (`--list` says "to be built" without it,
    /// rather than building).
    public let buildStamp: String?
    /// A file below the server's root every row is served over, at a URL ending in its name, for a client that takes
    /// only files of its own kind (pip: a wheel); nil for the rows' own resources.
    public let servedOver: String?
    /// Variables added to the program's environment for a job (axel's `SSL_CERT_FILE`).
    public let environment: @Sendable (ClientJob) -> [String: String]
    /// Why the program cannot be given the server's CA file, or nil when it can.
    public let tlsLimitation: String?
    /// The arguments that make the program print its version on its first line, when known (a definition's
    /// `version`).
    public let versionArguments: [String]?
    /// The arguments, put before all others, that make the program speak cleartext HTTP/2 with prior knowledge
    /// (curl's `--http2-prior-knowledge`, a definition's `h2c-arguments`); nil when it cannot be asked to.
    public private(set) var priorKnowledgeArguments: [String]?
    /// The protocols the program speaks, as its definition declares them (`http/1.1`, `h2`, `h2c`); nil when
    /// undeclared: it is then tried over h2, and the journal tells whether it negotiated h2.
    public private(set) var protocols: Set<String>?

    /// Makes a subprocess client.
    ///
    /// - Parameters:
    ///   - name: the column name.
    ///   - program: the program name or path.
    ///   - preferredDirectories: directories searched before PATH.
    ///   - capabilities: the supported steps.
    ///   - invocation: the invocation, for reports.
    ///   - transientExitCodes: statuses that are re-run.
    ///   - pausedExitCode: the status meaning "paused".
    ///   - probe: an availability check given the program's path.
    ///   - prepare: makes the program before it is looked for; returns why it could not.
    ///   - buildStamp: the file a finished build leaves, when `prepare` builds.
    ///   - servedOver: a file below the server's root every row is served over.
    ///   - tlsLimitation: why it cannot be given the server's CA file; nil when it can.
    ///   - environment: variables added to the program's environment for a job.
    ///   - inputFiles: files written before the program starts, contents by path.
    ///   - versionArguments: the arguments that print the version, if known.
    ///   - arguments: the argument builder.
    public init(
        name: String, program: String, preferredDirectories: [String] = [], capabilities: ClientCapabilities,
        invocation: String, transientExitCodes: Set<Int32>, pausedExitCode: Int32? = nil,
        probe: (@Sendable (String) async -> String?)? = nil,
        prepare: (@Sendable () async -> String?)? = nil, buildStamp: String? = nil, servedOver: String? = nil,
        tlsLimitation: String? = nil,
        environment: @escaping @Sendable (ClientJob) -> [String: String] = { _ in [:] },
        inputFiles: @escaping @Sendable (ClientJob) -> [String: String] = { _ in [:] },
        versionArguments: [String]? = nil,
        arguments: @escaping @Sendable (ClientJob) throws -> [String]
    ) {
        self.versionArguments = versionArguments
        self.name = name
        self.program = program
        self.preferredDirectories = preferredDirectories
        self.capabilities = capabilities
        self.invocation = invocation
        self.transientExitCodes = transientExitCodes
        self.pausedExitCode = pausedExitCode
        self.probe = probe
        self.prepare = prepare
        self.buildStamp = buildStamp
        self.servedOver = servedOver
        self.tlsLimitation = tlsLimitation
        self.environment = environment
        self.inputFiles = inputFiles
        self.arguments = arguments
    }

    /// The program's path, or nil when it is not installed.
    public var executablePath: String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in preferredDirectories + path.split(separator: ":").map(String.init) where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Whether a build step has yet to make the program.
    public var awaitsBuild: Bool {
        buildStamp.map { !FileManager.default.fileExists(atPath: $0) } ?? false
    }

    /// Why the program cannot run: its build failed, it is not found, or the probe refused it.
    ///
    /// - Returns: the reason, or nil when it can run.
    public func unavailableReason() async -> String? {
        if let prepare, let failed = await prepare() { return failed }
        guard let path = executablePath else { return "\(program) is not installed (not on PATH)" }
        return await probe?(path)
    }

    /// The installed program's version: the first number with dots (`7.88.1`) on the first line it prints for
    /// ``versionArguments``, else that line; nil when it is not installed, has no version arguments or printed
    /// nothing.
    public func version() async -> String? {
        guard let versionArguments, let path = executablePath,
            // A generous limit: a loaded machine (a CI run's parallel tests) has taken seconds to start a process.
            let printed = await ChildProcess.capture(path, versionArguments, limit: .seconds(30)),
            let line = printed.output.split(separator: "\n").first.map({ $0.trimmingCharacters(in: .whitespaces) }),
            !line.isEmpty
        else { return nil }
        return Self.versionNumber(in: line) ?? String(line.prefix(80))
    }

    /// The first run of digits and dots holding at least one dot between digits in `line` (`1.99.1`,
    /// `2025.10.22`), or nil.
    ///
    /// - Parameters:
    ///   - line: a version line.
    /// - Returns: the version number, if any.
    public static func versionNumber(in line: String) -> String? {
        var best: Substring?
        var index = line.startIndex
        while index < line.endIndex {
            guard line[index].isASCII, line[index].isNumber else {
                index = line.index(after: index)
                continue
            }
            var end = index
            while end < line.endIndex, line[end].isASCII, line[end].isNumber || line[end] == "." {
                end = line.index(after: end)
            }
            var candidate = line[index..<end]
            while candidate.last == "." { candidate = candidate.dropLast() }
            if candidate.contains(".") {
                best = candidate
                break
            }
            index = end
        }
        return best.map(String.init)
    }

    /// Starts the program.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the run.
    /// - Throws: `ConformanceError.clientFailed` when the program is missing or cannot start.
    public func start(_ job: ClientJob) async throws -> any ClientRun {
        guard let path = executablePath else { throw ConformanceError.clientFailed("\(program) is not installed") }
        for (file, contents) in inputFiles(job) {
            guard FileManager.default.createFile(atPath: file, contents: Data(contents.utf8)) else {
                throw ConformanceError.io("cannot write \(file)")
            }
        }
        let run = SubprocessRun(client: self, executable: path, job: job, arguments: try schemeArguments(job))
        try await run.launch()
        return run
    }

    /// The command ``start(_:)`` runs for `job`: the program (its path when it was found in a preferred directory,
    /// as `rangefetch` next to `rangecheck`; else as named, which PATH resolves), the arguments, the environment and
    /// the input files.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the command, or nil when the arguments cannot be built for the job.
    public func command(for job: ClientJob) -> ClientCommand? {
        guard let arguments = try? schemeArguments(job) else { return nil }
        let found = executablePath.flatMap { path in
            preferredDirectories.contains((path as NSString).deletingLastPathComponent) ? path : nil
        }
        return ClientCommand(
            program: found ?? program, arguments: arguments, environment: environment(job),
            files: inputFiles(job), rerunOn: transientExitCodes.sorted(), pausesOnInterrupt: pausedExitCode != nil,
            directory: job.namesFromServer ? job.workingDirectory : nil)
    }
}

/// The state machine of one subprocess client run: launches, re-runs, kills, pauses, and the record of every launch.
final class SubprocessRun: ClientRun, @unchecked Sendable {
    private struct State {
        var child: ChildProcess?
        var launches: [ClientLaunch] = []
        var runsSinceRestart = 0
        var relaunchAt: ContinuousClock.Instant?
        var paused = false
        var finished: ClientExit?

        /// Records the end of the latest launch, once.
        /// Marks the running launch as stopped by a step, now.
        mutating func stopped() {
            guard let last = launches.indices.last, launches[last].ended == nil else { return }
            launches[last].stopped = Date()
        }

        mutating func ended(status: Int32?) {
            guard let last = launches.indices.last, launches[last].ended == nil else { return }
            launches[last].ended = Date()
            launches[last].exitStatus = status
        }
    }

    private let client: SubprocessClient
    private let executable: String
    private let job: ClientJob
    private let arguments: [String]
    private let state = NIOLockedValueBox(State())

    init(client: SubprocessClient, executable: String, job: ClientJob, arguments: [String]) {
        self.client = client
        self.executable = executable
        self.job = job
        self.arguments = arguments
    }

    var launches: [ClientLaunch] { state.withLockedValue { $0.launches } }

    func launch(_ reason: ClientLaunch.Reason = .first) async throws {
        let launch = state.withLockedValue { state in
            state.launches.append(ClientLaunch(reason: reason, started: Date()))
            state.runsSinceRestart += 1
            state.relaunchAt = nil
            return state.launches.count
        }
        let child: ChildProcess
        do {
            child = try await ChildProcess(
                executable: executable, arguments: arguments, environment: client.environment(job),
                directory: job.workingDirectory, logDirectory: job.logDirectory, label: "\(client.name)-\(launch)")
        } catch {
            state.withLockedValue { $0.ended(status: nil) }
            throw error
        }
        state.withLockedValue { $0.child = child }
    }

    func poll() async -> ClientExit? {
        let relaunch: Bool = state.withLockedValue { state in
            if state.finished != nil || state.paused { return false }
            if let at = state.relaunchAt { return ContinuousClock.now >= at }
            guard let child = state.child, let status = child.status else { return false }
            state.ended(status: status)
            if status == 0 {
                state.finished = .success
            } else if client.transientExitCodes.contains(status) && state.runsSinceRestart < job.attempts {
                // A user's retry loop: `sleep 1` between runs.
                state.relaunchAt = ContinuousClock.now + .seconds(1)
            } else {
                let line = child.lastErrorLine
                let runs = state.runsSinceRestart
                state.finished = .failure(
                    "exit \(status)" + (runs == 1 ? "" : " after \(runs) runs") + (line.isEmpty ? "" : ": \(line)"))
            }
            return false
        }
        if relaunch {
            do {
                try await launch(.harnessRerun)
            } catch {
                state.withLockedValue { $0.finished = .failure("\(error)") }
            }
        }
        return state.withLockedValue { $0.finished }
    }

    func killAndRestart() async throws {
        guard let child = state.withLockedValue({ $0.child }) else { return }
        state.withLockedValue { $0.stopped() }
        child.kill()
        await child.waitForExit(limit: .seconds(10))
        state.withLockedValue { state in
            state.ended(status: child.status)
            state.runsSinceRestart = 0
        }
        try await launch(.stepRestart)
    }

    func pause() async throws {
        guard let code = client.pausedExitCode else {
            throw ConformanceError.clientFailed("\(client.name) cannot pause")
        }
        guard let child = state.withLockedValue({ $0.child }) else { return }
        state.withLockedValue {
            $0.paused = true
            $0.stopped()
        }
        child.signal(SIGINT)
        if !(await child.waitForExit(limit: .seconds(15))) {
            child.kill()
            await child.waitForExit(limit: .seconds(5))
            state.withLockedValue { $0.ended(status: child.status) }
            throw ConformanceError.clientFailed("\(client.name) did not stop within 15s of SIGINT")
        }
        state.withLockedValue { $0.ended(status: child.status) }
        if let status = child.status, status != code, status != 0 {
            throw ConformanceError.clientFailed("\(client.name) exited \(status) on SIGINT, expected \(code)")
        }
    }

    func resume() async throws {
        state.withLockedValue {
            $0.paused = false
            $0.runsSinceRestart = 0
        }
        // A pause that raced with completion leaves nothing to resume: the output is already there.
        if state.withLockedValue({ $0.child?.status }) == 0 {
            state.withLockedValue { $0.finished = .success }
            return
        }
        try await launch(.stepRestart)
    }

    func terminate() async {
        let child = state.withLockedValue { state -> ChildProcess? in
            state.finished = state.finished ?? .failure("terminated")
            state.relaunchAt = nil
            return state.child
        }
        child?.kill()
        await child?.waitForExit(limit: .seconds(5))
        state.withLockedValue { $0.ended(status: child?.status) }
    }
}

extension SubprocessClient {
    /// This client, speaking `protocols`, told how to speak cleartext HTTP/2 with prior knowledge when it can.
    ///
    /// - Parameters:
    ///   - protocols: `http/1.1`, `h2` (over TLS, by ALPN), `h2c`.
    ///   - priorKnowledge: the words put before all others for an h2c job.
    /// - Returns: the client.
    public func speaking(_ protocols: Set<String>, priorKnowledge: [String]? = nil) -> SubprocessClient {
        var client = self
        client.protocols = protocols
        client.priorKnowledgeArguments = priorKnowledge
        return client
    }

    public func protocolLimitation(_ scheme: MatrixScheme) -> String? {
        switch scheme {
        case .http, .https:
            return nil
        case .h2:
            guard let protocols, !protocols.contains("h2") else { return nil }
            return "\(name) speaks HTTP/1.1 only (its protocols: \(protocols.sorted().joined(separator: ", ")))"
        case .h2c:
            if let protocols, !protocols.contains("h2c") {
                return "\(name) has no cleartext HTTP/2 (its protocols: \(protocols.sorted().joined(separator: ", ")))"
            }
            guard priorKnowledgeArguments == nil else { return nil }
            return "\(name) cannot be asked for cleartext HTTP/2 (prior knowledge)"
        }
    }

    /// The job's arguments, with the prior-knowledge words first for an h2c job.
    func schemeArguments(_ job: ClientJob) throws -> [String] {
        let words = try arguments(job)
        guard job.scheme == .h2c, let priorKnowledgeArguments else { return words }
        return priorKnowledgeArguments + words
    }
}
