import Foundation
import RangeServer

extension MatrixRunner {
    /// Runs one pair once: fresh directory, fresh run token, steps, facts, verdict.
    ///
    /// When the task is cancelled while the client runs, the client is terminated and the cell is
    /// `skipped("interrupted")`, with no verdict: ``run(clients:options:)`` leaves such a cell out. A directory kept
    /// with ``Options/keepWorkDirectories`` holds the run's `journal.jsonl` as usual, and the cell's note names it.
    ///
    /// - Parameters:
    ///   - row: the scenario; for a column with `serve-over`, served over its file (``CatalogueEntry/served(over:root:client:)``),
    ///     or n/a with why.
    ///   - client: the client.
    ///   - server: a running server that loaded the scenario.
    ///   - options: timeouts and retry settings.
    /// - Returns: the cell.
    public static func runPair(
        _ row: CatalogueEntry, client: any ClientAdapter, server: RangeServer, options: Options
    ) async -> MatrixCell {
        var entry = row
        if let file = (client as? SubprocessClient)?.servedOver {
            switch row.served(over: file, root: options.filesRoot, client: client.name) {
            case .success(let served): entry = served
            case .failure(let reason):
                return MatrixCell(scenario: row.name, client: client.name, result: .notApplicable(reason.message))
            }
        }
        let expectation = entry.expectation
        let missing = expectation.requiredCapabilities.subtracting(client.capabilities)
        if !missing.isEmpty {
            return MatrixCell(
                scenario: entry.name, client: client.name,
                result: .notApplicable("\(client.name) cannot \(describe(missing))"))
        }
        if let exclusion = options.scheme.exclusion(of: entry) {
            return MatrixCell(scenario: entry.name, client: client.name, result: .notApplicable(exclusion))
        }
        if let limitation = client.protocolLimitation(options.scheme) {
            return MatrixCell(scenario: entry.name, client: client.name, result: .notApplicable(limitation))
        }
        if options.scheme.isTLS || entry.redirectsToTLS, let limitation = client.tlsLimitation {
            return MatrixCell(
                scenario: entry.name, client: client.name,
                result: .notApplicable("over https \(client.name) cannot be given the server's CA: \(limitation)"))
        }
        if let reason = worldProblem(entry) {
            return MatrixCell(scenario: entry.name, client: client.name, result: .notApplicable(reason))
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
        // The directories the client writes to: on the row's own small filesystem for `disk-full-at`.
        let disk = expectation.diskFullSize.map { _ in "\(work)/disk" }
        defer {
            if let disk { ClientWorld.unmountFilesystem(at: disk) }
            if !options.keepWorkDirectories { try? FileManager.default.removeItem(atPath: work) }
        }
        if let disk, let size = expectation.diskFullSize {
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            try ClientWorld.mountFilesystem(at: disk, size: size)
            for sub in ["out", "state"] {
                try FileManager.default.createDirectory(atPath: "\(disk)/\(sub)", withIntermediateDirectories: true)
            }
        }
        let outDirectory = "\(disk ?? work)/out"
        let stateDirectory = "\(disk ?? work)/state"
        let token = "\(client.name)-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        let origin: String
        switch self.origin(entry, server: server, options: options) {
        case .success(let found): origin = found
        case .failure(let problem):
            return MatrixCell(scenario: entry.name, client: client.name, result: .fail("harness: \(problem)"))
        }
        let base = "\(origin)/scenario/\(entry.name)/\(token)"
        let transfers = entry.transfers(base: base, outputs: outDirectory)
        var job = ClientJob(
            transfers: transfers, stateDirectory: stateDirectory, logDirectory: "\(work)/logs",
            concurrency: expectation.concurrency ?? 1, idleTimeout: options.idleTimeout, attempts: options.attempts)
        job.configure(for: expectation)
        job.certificateAuthorityFile = server.certificateAuthorityPath
        job.scheme = options.scheme
        let total = entry.reference.length * UInt64(transfers.count)

        var prefilled: UInt64 = 0
        var steps: [ScenarioExpectation.Step] = []
        for step in expectation.steps {
            switch step {
            case .prefill(let threshold):
                prefilled = min(threshold.bytes(of: entry.reference.length), entry.reference.length)
                for transfer in transfers { try prefill(transfer.output, entry: entry, count: prefilled) }
            case .diskFull: break
            default: steps.append(step)
            }
        }

        let limit = entry.isSlow ? options.slowPairTimeout : options.pairTimeout
        // Connections are counted on the port the client was sent to, from a quiet port (see `awaitQuiet`).
        let sampledPort: Int
        switch options.scheme {
        case .http: sampledPort = server.port
        case .https: sampledPort = server.tlsPort ?? server.port
        case .h2: sampledPort = server.h2Port ?? server.port
        case .h2c: sampledPort = server.h2cPort ?? server.port
        }
        let sampledHost = server.configuration.host
        let residue = await ConnectionSampler.awaitQuiet(localHost: sampledHost, port: sampledPort, within: .seconds(2))
        let started = ContinuousClock.now
        var watch = Watch(
            steps: steps, total: total, watched: [outDirectory, stateDirectory], sampledHost: sampledHost,
            sampledPort: sampledPort,
            deadIPv6Port: expectation.entry == .deadIPv6 ? server.deadIPv6Port : nil,
            deadline: started + limit)
        watch.residue = residue
        let droppedBefore = watch.deadIPv6Port != nil ? server.deadIPv6DroppedConnects : nil
        var run = try await client.start(job)
        await watch.drive(run)
        if let droppedBefore, let droppedAfter = server.deadIPv6DroppedConnects {
            watch.ipv6DroppedConnects = droppedAfter - droppedBefore
        }
        var launches = run.launches
        // `disk-full-at`: the client has ended on the full filesystem; what it left is judged, then the filesystem
        // gets room and the same job runs again.
        var diskFull: RunFacts.DiskFull?
        if let disk, let size = expectation.diskFullSize, !watch.isLost {
            diskFull = RunFacts.DiskFull(
                size: size, exit: watch.exit ?? .failure("no exit"),
                outputs: transfers.map { inspect($0.output, entry: entry, digest: false) })
            try ClientWorld.resizeFilesystem(at: disk, size: total * 2 + (16 << 20))
            // The full disk stopped that start, as a kill would: a response it left is the step's doing, not a
            // probe or the client's own choice. The step was in force from the start on.
            if let last = launches.indices.last { launches[last].stopped = launches[last].started }
            watch.exit = nil
            run = try await client.start(job)
            await watch.drive(run)
            // The second start is the step's, not the harness's re-run: what it fetches counts against the bounds.
            launches += run.launches.enumerated().map { index, launch in
                var launch = launch
                if index == 0 { launch.reason = .stepRestart }
                return launch
            }
        }
        let elapsed = ContinuousClock.now - started
        if !watch.interrupted && Task.isCancelled {
            // Cancelled during a step (its sleep ends at once): the client may still be running.
            watch.interrupted = true
            await run.terminate()
        }
        if watch.interrupted {
            // No verdict. A directory --keep keeps gets the run's journal as any other, and the cell a note naming
            // it, which the interruption line repeats (the cell itself is left out).
            guard options.keepWorkDirectories else {
                return MatrixCell(scenario: entry.name, client: client.name, result: .skipped("interrupted"))
            }
            // Outside the cancelled task, briefly: the killed client's last response ends as the server notices.
            let settled = Task { await settledJournal(server: server, run: token, timeout: .seconds(2)) }
            writeJournal(await settled.value, in: work)
            return MatrixCell(
                scenario: entry.name, client: client.name, result: .skipped("interrupted"),
                notes: ["its directory is kept in \(work)"])
        }
        let entries = await settledJournal(server: server, run: token)
        // Beside the outputs and logs: the requests the verdict was drawn from.
        if options.keepWorkDirectories { writeJournal(entries, in: work) }
        // Inspected even when the run is already lost (timed out, a step failed): the picture of a failed run is
        // the one most worth seeing.
        var outputs = transfers.map { inspect($0.output, entry: entry, digest: expectation.sha256 != nil) }
        // A client that names its output: the output is found in the directory it was given.
        let serverNamed = expectation.outputNames.map { names in
            ServerNamedOutput.resolve(
                inspectDirectory(outDirectory, entry: entry, digest: expectation.sha256 != nil), names: names
            ) {
                ServerNamedOutput.isComplete($0, length: entry.expectedLength, version: entry.expectedVersion)
            }
        }
        if let serverNamed { outputs = [serverNamed.output] }
        var facts = RunFacts(
            entries: entries, outputs: outputs, resourceLength: entry.expectedLength,
            expectedVersion: entry.expectedVersion, exit: watch.exit ?? .failure("no exit"), elapsed: elapsed,
            observedPeakConnections: watch.peak, prefilledBytes: prefilled,
            segmented: client.capabilities.contains(.segmented), launches: launches)
        facts.diskFull = diskFull
        facts.serverNamed = serverNamed
        facts.ipv6Attempts = watch.deadIPv6Port.map { _ in watch.ipv6AttemptCount }
        let trace = RunTrace(entry: entry, facts: facts)
        var judged = expectation
        judged.maxElapsed = expectation.maxElapsed.map { $0 * options.timeAllowance }
        let judgement = Judge.judgement(of: judged, in: facts)
        // A run lost before the judge could decide (a hang, a step that failed) is graded `fail`, with no reasons.
        func cell(_ result: CellResult, reasons: [Violation] = []) -> MatrixCell {
            MatrixCell(
                scenario: entry.name, client: client.name, result: result, elapsed: elapsed, trace: trace,
                notes: judgement.notes, reasons: reasons,
                reproducer: result.isFailure
                    ? reproducer(
                        entry, client: client, run: token, server: server, options: options,
                        observed: result.reason, kept: options.keepWorkDirectories ? work : nil) : nil)
        }
        if watch.timedOut { return cell(.fail("timed out after \(Judge.seconds(limit))")) }
        if let stepFailure = watch.stepFailure { return cell(.fail(stepFailure)) }
        if let step = watch.steps.first {
            return cell(
                .fail("finished before the \(describe(step)) step was reached (\(watch.exit?.summary ?? "no exit"))"))
        }
        // Over an HTTP/2 scheme, a client whose requests did not come over HTTP/2 was not tested by it: n/a.
        if options.scheme.isHTTP2, expectation.entry == .server,
            let reason = Judge.http2Problem(entries, scheme: options.scheme)
        {
            return cell(.notApplicable(reason))
        }
        // A client that never tried the dead address was not tested by the row: n/a, never a pass.
        if let port = watch.deadIPv6Port, watch.ipv6AttemptCount == 0, judgement.result == .pass {
            return cell(.notApplicable("did not try IPv6 (no connect to [::1]:\(port) seen)"))
        }
        return cell(judgement.result, reasons: judgement.reasons)
    }

    /// Where the row's URLs point: the server, its blackhole listener, or the dual-stack name at the server's port.
    private static func origin(
        _ entry: CatalogueEntry, server: RangeServer, options: Options
    ) -> Result<String, ConformanceError> {
        let scheme = options.scheme.urlScheme
        switch entry.expectation.entry {
        case .server:
            let base: String?
            switch options.scheme {
            case .http: base = server.baseURL
            case .https: base = server.tlsBaseURL
            case .h2: base = server.h2BaseURL
            case .h2c: base = server.h2cBaseURL
            }
            return base.map { .success($0) } ?? .failure(.io("the server has no \(options.scheme.rawValue) port"))
        case .blackhole:
            guard let port = server.blackholePort else { return .failure(.io("the server has no blackhole listener")) }
            return .success("\(scheme)://127.0.0.1:\(port)")
        case .deadIPv6:
            guard options.scheme == .http, let port = server.deadIPv6Port else {
                return .failure(.io("the server has no dead IPv6 listener on its plain port"))
            }
            return .success("http://\(ClientWorld.dualStackName):\(port)")
        }
    }

    private static func inspect(_ path: String, entry: CatalogueEntry, digest: Bool) -> OutputFacts {
        OutputInspector.inspect(
            path: path, reference: entry.attributionContent, versions: entry.versions,
            expectedVersion: entry.expectedVersion,
            computeDigest: digest)
    }

    /// Every regular file directly in `directory`, inspected, in name order.
    private static func inspectDirectory(_ directory: String, entry: CatalogueEntry, digest: Bool) -> [OutputFacts] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().compactMap { name in
            var status = stat()
            guard lstat("\(directory)/\(name)", &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
            return inspect("\(directory)/\(name)", entry: entry, digest: digest)
        }
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

    /// Writes `entries` as `journal.jsonl` in a kept pair directory, one JSON object a line.
    private static func writeJournal(_ entries: [JournalEntry], in work: String) {
        let lines: [UInt8] = entries.flatMap { $0.jsonBytes + [0x0A] }
        _ = FileManager.default.createFile(atPath: "\(work)/journal.jsonl", contents: Data(lines))
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
