import Foundation
import RangeServer

/// The I/O shell around the judge: starts a server, runs each pair in a fresh directory with a fresh run
/// token, performs the scenario's client-side steps, gathers facts and asks the judge.
public enum MatrixRunner {
    /// How the matrix runs.
    public struct Options: Sendable {
        /// The scenario directory.
        public var scenariosDirectory = "fixtures/scenarios"
        /// The directory served under `/files/`.
        public var filesRoot = "fixtures/files"
        /// Only scenarios matching this glob (comma-separated alternatives); nil runs all.
        public var scenarioPattern: String?
        /// The slice of (scenario, client) pairs to run.
        public var shard = Shard.all
        /// How many times each pair runs; a pair fails when any run fails.
        public var repeatCount = 1
        /// Whether scenarios tagged `slow` run (otherwise they are left out of the matrix).
        public var includeSlow = false
        /// The idle timeout given to every client.
        public var idleTimeout: Duration = .seconds(5)
        /// The most runs of a subprocess client per start (the first, and each step's restart), that start included:
        /// the harness runs a client again only after an exit its definition declares transient.
        public var attempts = 5
        /// A pair still running after this long is stopped and fails.
        public var pairTimeout: Duration = .seconds(120)
        /// The limit for `slow` scenarios.
        public var slowPairTimeout: Duration = .seconds(1800)
        /// Keep each pair's temporary directory (outputs, logs) instead of removing it.
        public var keepWorkDirectories = false
        /// Hand every scenario out over https (the server's TLS port) instead of http; clients are given the CA.
        public var tls = false
        /// Called with one line per finished pair (and other progress).
        public var progress: (@Sendable (String) -> Void)?
        /// The command line, recorded in reports.
        public var command = "rangecheck"

        /// Options with every default.
        public init() {}
    }

    /// The rows this run will show, in order: matching `scenarioPattern`, slow ones only when included.
    ///
    /// - Parameters:
    ///   - catalogue: every entry.
    ///   - options: the filters.
    /// - Returns: the selected entries.
    public static func select(_ catalogue: [CatalogueEntry], options: Options) -> [CatalogueEntry] {
        catalogue.filter { entry in
            (options.scenarioPattern.map { Glob.matches($0, entry.name) } ?? true)
                && (options.includeSlow || !entry.isSlow)
        }
    }

    /// Runs the matrix.
    ///
    /// Cancelling the task stops the run cleanly: the running pair's client is terminated (its whole process group
    /// killed) and its directory removed (unless kept), no further pair starts, and the matrix of the pairs that
    /// finished is returned with ``Matrix/interruption`` set.
    ///
    /// - Parameters:
    ///   - clients: the columns, in order.
    ///   - options: what to run and how.
    /// - Returns: the matrix of the pairs in the shard (those that finished, when cancelled).
    /// - Throws: a scenario or expectation error while loading, or a server start error.
    public static func run(clients: [any ClientAdapter], options: Options) async throws -> Matrix {
        let catalogue = select(
            try CatalogueEntry.load(directory: options.scenariosDirectory, root: options.filesRoot), options: options)
        var configuration = RangeServer.Configuration()
        configuration.root = options.filesRoot
        configuration.scenariosDirectory = options.scenariosDirectory
        configuration.threads = 8
        // For the rows that send a client to an edge that never answers (`entry: blackhole`, `blackhole:` steps).
        configuration.blackholePort = 0
        // The TLS port (0: a free one); without it the server still opens one when a row redirects to https.
        if options.tls { configuration.tlsPort = 0 }
        return try await withRangeServer(configuration) { server in
            var unavailable: [String: String?] = [:]
            for client in clients { unavailable[client.name] = await client.unavailableReason() }
            var cells: [MatrixCell] = []
            let byName = Dictionary(catalogue.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let clientByName = Dictionary(clients.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let pairs = options.shard.pairs(scenarios: catalogue.map(\.name), clients: clients.map(\.name))
            var interruption: String?
            for pair in pairs {
                if Task.isCancelled {
                    interruption = "interrupted after \(cells.count) of \(pairs.count) pairs"
                    break
                }
                let entry = byName[pair.scenario]!
                let client = clientByName[pair.client]!
                let cell: MatrixCell
                if let reason = unavailable[client.name] ?? nil {
                    cell = MatrixCell(scenario: entry.name, client: client.name, result: .skipped(reason))
                } else {
                    cell = await runRepeated(entry, client: client, server: server, options: options)
                }
                // A pair cut short by the cancellation has no verdict: it is left out, not failed.
                if Task.isCancelled {
                    interruption = "interrupted after \(cells.count) of \(pairs.count) pairs"
                    break
                }
                options.progress?(
                    "\(cell.result.label) \(cell.scenario) × \(cell.client)"
                        + (cell.result.reason.isEmpty ? "" : ": \(cell.result.reason)"))
                cells.append(cell)
            }
            return Matrix(
                scenarios: catalogue.map(\.name), clients: clients.map(\.name), cells: cells,
                invocations: Dictionary(
                    clients.map { ($0.name, $0.invocation) }, uniquingKeysWith: { first, _ in first }),
                command: options.command, scheme: options.tls ? "https" : "http",
                descriptions: CatalogueEntry.descriptions(catalogue), interruption: interruption)
        }
    }

    static func runRepeated(
        _ entry: CatalogueEntry, client: any ClientAdapter, server: RangeServer, options: Options
    )
        async -> MatrixCell
    {
        var total: Duration = .zero
        // The picture of a repeated pair is its failing run's, else its last run's.
        var trace: RunTrace?
        // The notes of every round, each once, prefixed with its round when there are several.
        var notes: [String] = []
        for round in 1...max(1, options.repeatCount) {
            let cell = await runPair(entry, client: client, server: server, options: options)
            total += cell.elapsed ?? .zero
            trace = cell.trace
            notes += cell.notes.map { options.repeatCount > 1 ? "run \(round)/\(options.repeatCount): \($0)" : $0 }
            if Task.isCancelled { return cell }
            if case .fail(let reason) = cell.result, options.repeatCount > 1 {
                return MatrixCell(
                    scenario: entry.name, client: client.name,
                    result: .fail("run \(round)/\(options.repeatCount): \(reason)"),
                    elapsed: total, trace: trace, notes: notes, reasons: cell.reasons)
            }
            if cell.result != .pass { return cell }
        }
        return MatrixCell(
            scenario: entry.name, client: client.name, result: .pass, elapsed: total, trace: trace, notes: notes)
    }

    /// Runs one pair once: fresh directory, fresh run token, steps, facts, verdict.
    ///
    /// When the task is cancelled while the client runs, the client is terminated and the cell is
    /// `skipped("interrupted")`, with no verdict: ``run(clients:options:)`` leaves such a cell out.
    ///
    /// - Parameters:
    ///   - entry: the scenario.
    ///   - client: the client.
    ///   - server: a running server that loaded the scenario.
    ///   - options: timeouts and retry settings.
    /// - Returns: the cell.
    public static func runPair(
        _ entry: CatalogueEntry, client: any ClientAdapter, server: RangeServer, options: Options
    ) async -> MatrixCell {
        let expectation = entry.expectation
        let missing = expectation.requiredCapabilities.subtracting(client.capabilities)
        if !missing.isEmpty {
            return MatrixCell(
                scenario: entry.name, client: client.name,
                result: .notApplicable("\(client.name) cannot \(describe(missing))"))
        }
        if options.tls && entry.isHTTPOnly {
            return MatrixCell(
                scenario: entry.name, client: client.name,
                result: .notApplicable("the row's fault works on plain http only (tagged http-only)"))
        }
        if options.tls || entry.redirectsToTLS, let limitation = client.tlsLimitation {
            return MatrixCell(
                scenario: entry.name, client: client.name,
                result: .notApplicable("over https \(client.name) cannot be given the server's CA: \(limitation)"))
        }
        do {
            return try await execute(entry, client: client, server: server, options: options)
        } catch {
            return MatrixCell(scenario: entry.name, client: client.name, result: .fail("harness: \(error)"))
        }
    }

    private static func execute(
        _ entry: CatalogueEntry, client: any ClientAdapter, server: RangeServer, options: Options
    ) async throws -> MatrixCell {
        let expectation = entry.expectation
        let work = try makeWorkDirectory()
        defer { if !options.keepWorkDirectories { try? FileManager.default.removeItem(atPath: work) } }
        let token = "\(client.name)-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        var origin = server.baseURL
        if options.tls {
            guard let tlsBase = server.tlsBaseURL else {
                return MatrixCell(
                    scenario: entry.name, client: client.name, result: .fail("harness: the server has no TLS port"))
            }
            origin = tlsBase
        }
        if expectation.entry == .blackhole {
            guard let port = server.blackholePort else {
                return MatrixCell(
                    scenario: entry.name, client: client.name,
                    result: .fail("harness: the server has no blackhole listener"))
            }
            origin = "\(options.tls ? "https" : "http")://127.0.0.1:\(port)"
        }
        let base = "\(origin)/scenario/\(entry.name)/\(token)"
        let transfers: [ClientJob.Transfer] =
            expectation.files.isEmpty
            ? [ClientJob.Transfer(url: base, output: "\(work)/out/\(entry.name).bin")]
            : expectation.files.map { ClientJob.Transfer(url: "\(base)/\($0)", output: "\(work)/out/\($0)") }
        var job = ClientJob(
            transfers: transfers, stateDirectory: "\(work)/state", logDirectory: "\(work)/logs",
            concurrency: expectation.concurrency ?? 1, idleTimeout: options.idleTimeout, attempts: options.attempts)
        job.connectTimeout = expectation.connectTimeout ?? job.connectTimeout
        job.retries = expectation.retries
        job.certificateAuthorityFile = server.certificateAuthorityPath
        let total = entry.reference.length * UInt64(transfers.count)

        var prefilled: UInt64 = 0
        var steps: [ScenarioExpectation.Step] = []
        for step in expectation.steps {
            if case .prefill(let threshold) = step {
                prefilled = min(threshold.bytes(of: entry.reference.length), entry.reference.length)
                for transfer in transfers { try prefill(transfer.output, entry: entry, count: prefilled) }
            } else {
                steps.append(step)
            }
        }

        let limit = entry.isSlow ? options.slowPairTimeout : options.pairTimeout
        let started = ContinuousClock.now
        let run = try await client.start(job)
        // Connections are counted on the port the client was sent to.
        let sampledPort = options.tls ? server.tlsPort ?? server.port : server.port
        var peak = 0
        var exit: ClientExit?
        var timedOut = false
        var stepFailure: String?
        var interrupted = false
        while exit == nil {
            exit = await run.poll()
            if exit != nil { break }
            if Task.isCancelled {
                // The harness is stopping (SIGINT, SIGTERM): the client's processes go with it.
                interrupted = true
                await run.terminate()
                break
            }
            if let count = ConnectionSampler.established(toLocalPort: sampledPort) { peak = max(peak, count) }
            if ContinuousClock.now - started > limit {
                timedOut = true
                await run.terminate()
                break
            }
            if let step = steps.first {
                let onDisk = OutputInspector.bytesOnDisk(under: ["\(work)/out", "\(work)/state"])
                if onDisk >= threshold(of: step).bytes(of: total) {
                    steps.removeFirst()
                    do {
                        try await perform(step, on: run)
                    } catch {
                        stepFailure = "step failed: \(error)"
                        await run.terminate()
                        break
                    }
                    continue
                }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let elapsed = ContinuousClock.now - started
        if !interrupted && Task.isCancelled {
            // Cancelled during a step (its sleep ends at once): the client may still be running.
            interrupted = true
            await run.terminate()
        }
        if interrupted {
            return MatrixCell(scenario: entry.name, client: client.name, result: .skipped("interrupted"))
        }
        let entries = await settledJournal(server: server, run: token)
        if options.keepWorkDirectories {
            // Beside the outputs and logs: the requests the verdict was drawn from.
            let lines: [UInt8] = entries.flatMap { $0.jsonBytes + [0x0A] }
            _ = FileManager.default.createFile(atPath: "\(work)/journal.jsonl", contents: Data(lines))
        }
        // Inspected even when the run is already lost (timed out, a step failed): the picture of a failed run is
        // the one most worth seeing.
        let outputs = transfers.map {
            OutputInspector.inspect(
                path: $0.output, reference: entry.reference, versions: entry.versions,
                expectedVersion: entry.expectedVersion, computeDigest: expectation.sha256 != nil)
        }
        let facts = RunFacts(
            entries: entries, outputs: outputs, resourceLength: entry.reference.length,
            expectedVersion: entry.expectedVersion, exit: exit ?? .failure("no exit"), elapsed: elapsed,
            observedPeakConnections: peak, prefilledBytes: prefilled,
            segmented: client.capabilities.contains(.segmented), launches: run.launches)
        let trace = RunTrace(entry: entry, facts: facts)
        let judgement = Judge.judgement(of: expectation, in: facts)
        // A run lost before the judge could decide (a hang, a step that failed) is graded `fail`, with no reasons.
        func cell(_ result: CellResult, reasons: [Violation] = []) -> MatrixCell {
            MatrixCell(
                scenario: entry.name, client: client.name, result: result, elapsed: elapsed, trace: trace,
                notes: judgement.notes, reasons: reasons)
        }
        if timedOut { return cell(.fail("timed out after \(Judge.seconds(limit))")) }
        if let stepFailure { return cell(.fail(stepFailure)) }
        if let step = steps.first {
            return cell(.fail("finished before the \(describe(step)) step was reached (\(exit?.summary ?? "no exit"))"))
        }
        return cell(judgement.result, reasons: judgement.reasons)
    }

    private static func perform(_ step: ScenarioExpectation.Step, on run: any ClientRun) async throws {
        switch step {
        case .killAndRestart: try await run.killAndRestart()
        case .pause(_, let duration):
            try await run.pause()
            try await Task.sleep(for: duration)
            try await run.resume()
        case .cancel: try await run.cancel()
        case .prefill: break
        }
    }

    static func threshold(of step: ScenarioExpectation.Step) -> ScenarioExpectation.Threshold {
        switch step {
        case .killAndRestart(let at), .pause(let at, _), .cancel(let at), .prefill(let at): at
        }
    }

    static func describe(_ step: ScenarioExpectation.Step) -> String {
        let at = threshold(of: step).text
        switch step {
        case .killAndRestart: return "kill-at \(at)"
        case .pause: return "pause-at \(at)"
        case .cancel: return "cancel-at \(at)"
        case .prefill: return "prefill \(at)"
        }
    }

    static func describe(_ capabilities: ClientCapabilities) -> String {
        var words: [String] = []
        if capabilities.contains(.killAndRestart) { words.append("be killed and restarted") }
        if capabilities.contains(.pauseAndResume) { words.append("pause and resume") }
        if capabilities.contains(.cancel) { words.append("cancel") }
        if capabilities.contains(.prefilledOutput) { words.append("continue a prefilled output file") }
        if capabilities.contains(.multipleFiles) { words.append("download several files at once") }
        return words.joined(separator: " or ")
    }

    /// The run's journal once the server has answered every request of it (`Journal.settled`): a response the
    /// server was still writing or watching when the client exited is in it, and nothing is guessed from a quiet
    /// moment. A request still open after `timeout` (a response the client left running, which a run that ended does
    /// not have) is left out.
    static func settledJournal(
        server: RangeServer, run: String, timeout: Duration = .seconds(10)
    ) async -> [JournalEntry] {
        await server.journal.settled(run: run, timeout: timeout).entries
    }

    private static func prefill(_ path: String, entry: CatalogueEntry, count: UInt64) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw ConformanceError.io("cannot write \(path)") }
        defer { try? handle.close() }
        try entry.reference.forEachBlock(version: entry.expectedVersion, size: OutputInspector.blockSize, upTo: count) {
            try handle.write(contentsOf: Data($0))
        }
    }

    private static func makeWorkDirectory() throws -> String {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/rangecheck.XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let path = created else { throw ConformanceError.io("cannot create a temporary directory in \(base)") }
        for sub in ["out", "state", "logs"] {
            try FileManager.default.createDirectory(atPath: "\(path)/\(sub)", withIntermediateDirectories: true)
        }
        return path
    }
}
