import Foundation
import RangeServer

extension ConformanceService {
    /// `POST /_conformance/runs/{run}/result`: judges the run from the journal and the reported outputs, keeps the
    /// verdict, and returns it.
    ///
    /// - Throws: `notFound` for a run never handed out, `conflict` for one already reported or a report that does
    ///   not fit its run (its outputs are not one per URL the run handed out, lack the names its row asks for, or
    ///   have a `blocks` list that does not fit `size`: rules the API document cannot state; nothing is kept then,
    ///   and the run can be reported again), `invalidReport` for one the document refuses.
    func judge(
        run: String, report: ConformanceAPI.ResultReport
    ) async throws(ConformanceError)
        -> ConformanceAPI.Verdict
    {
        let claimed = claim(run)
        guard let claimed else { throw missing(run) }
        let pending = try claimed.get()
        do {
            let (verdict, trace) = try await verdict(of: pending, report: report)
            try store.append(ResultStore.Line(verdict: verdict, trace: trace))
            let now = configuration.clock()
            runs.withLockedValue { $0.set(.judged(verdict), forKey: run, now: now) }
            return verdict
        } catch {
            let now = configuration.clock()
            runs.withLockedValue { runs in
                guard case .pending(var pending) = runs.peekValue(forKey: run, now: now) else { return }
                pending.judging = false
                runs.set(.pending(pending), forKey: run, now: now)
            }
            throw error
        }
    }

    /// Marks a pending run as being judged, so a second report of it is refused at once; nil when it is not held.
    private func claim(_ run: String) -> Result<PendingRun, ConformanceError>? {
        let now = configuration.clock()
        return runs.withLockedValue { runs -> Result<PendingRun, ConformanceError>? in
            switch runs.value(forKey: run, now: now) {
            case nil: return nil
            case .judged: return .failure(.conflict("run '\(run)' was already reported"))
            case .pending(var pending):
                guard !pending.judging else { return .failure(.conflict("run '\(run)' was already reported")) }
                pending.judging = true
                runs.set(.pending(pending), forKey: run, now: now)
                return .success(pending)
            }
        }
    }

    private func verdict(
        of pending: PendingRun, report: ConformanceAPI.ResultReport
    ) async throws(ConformanceError)
        -> (ConformanceAPI.Verdict, RunTrace)
    {
        guard let entry = entries[pending.scenario], let server else {
            throw .notFound("unknown scenario '\(pending.scenario)'")
        }
        let exit: ClientExit
        switch report.outcome {
        case "success": exit = .success
        case "failure": exit = .failure(report.detail.map { String($0.prefix(200)) } ?? "reported by the client")
        case "cancelled": exit = .cancelled
        default: throw .invalidReport("outcome: '\(report.outcome)' is not success, failure or cancelled")
        }
        try Self.checkFit(of: report)
        var outputs: [OutputFacts] = []
        var serverNamed: ServerNamedOutput?
        if let names = entry.expectation.outputNames {
            serverNamed = try self.serverNamed(report.outputs, names: names, entry: entry)
        }
        if let serverNamed {
            outputs = [serverNamed.output]
        } else {
            for handed in pending.urls {
                guard let output = report.outputs.first(where: { $0.route == handed.route }) else {
                    throw .conflict(
                        "outputs: no output for route '\(handed.route)', which run '\(pending.run)' handed out")
                }
                outputs.append(try reportedOutputs.facts(of: output, entry: entry))
            }
        }
        for output in report.outputs where !pending.urls.contains(where: { $0.route == output.route }) {
            throw .conflict("outputs: run '\(pending.run)' has no route '\(output.route)'")
        }
        let journal = await MatrixRunner.settledJournal(server: server, run: pending.run)
        var facts = Self.facts(entry, pending, journal, outputs, exit)
        facts.serverNamed = serverNamed
        if let size = entry.expectation.diskFullSize, let outcome = report.diskFullOutcome {
            // The tester reports the first run's outcome only; what it left is judged through the second's requests.
            let first: ClientExit =
                switch outcome {
                case "success": .success
                case "cancelled": .cancelled
                default: .failure("reported by the client")
                }
            facts.diskFull = RunFacts.DiskFull(size: size, exit: first, outputs: nil)
        }
        let judgement = Judge.judgement(of: entry.expectation, in: facts)
        var result = Self.cellResult(entry: entry, pending: pending, report: report, judgement: judgement)
        // Over an HTTP/2 scheme, a client whose requests did not come over HTTP/2 was not tested by it.
        if let scheme = MatrixScheme(rawValue: pending.scheme), entry.expectation.entry == .server,
            let reason = Judge.http2Problem(journal, scheme: scheme)
        {
            result = .notApplicable(reason)
        }
        var verdict = ConformanceAPI.Verdict(
            scenario: entry.name, client: pending.client, scheme: pending.scheme, run: pending.run,
            result: result.label == "FAIL" ? "fail" : result.label, reason: result.reason,
            time: Date().formatted(.iso8601),
            elapsedMilliseconds: facts.elapsed.components.seconds * 1000 + facts.elapsed.components.attoseconds
                / 1_000_000_000_000_000)
        if !judgement.notes.isEmpty { verdict.notes = judgement.notes }
        if result == .pass || result.isFailure {
            verdict.grade = judgement.grade.rawValue
            if !judgement.reasons.isEmpty { verdict.reasons = judgement.reasons }
        }
        if result.isFailure {
            verdict.reproducer = Self.reproducer(entry, pending, server: server, observed: result.reason)
        }
        return (verdict, RunTrace(entry: entry, facts: facts))
    }

    /// The output of a row whose client names its file, from every file the tester reports with its name.
    private func serverNamed(
        _ reported: [ConformanceAPI.ReportedOutput], names: [String], entry: CatalogueEntry
    ) throws(ConformanceError) -> ServerNamedOutput {
        var files: [OutputFacts] = []
        for output in reported where output.exists != false {
            guard let name = output.name else {
                throw .conflict(
                    "outputs: this row's client names its file (output-names): report every file it left with its name")
            }
            var facts = try reportedOutputs.facts(of: output, entry: entry)
            facts.name = name
            files.append(facts)
        }
        return ServerNamedOutput.resolve(files, names: names) {
            ServerNamedOutput.isComplete($0, length: entry.expectedLength, version: entry.expectedVersion)
        }
    }

    /// A failed run's reproducer: the service's catalogue on a `rangeserver` of its own, reached at the host the
    /// tester was handed, and the tester's client fetching the run's URLs.
    static func reproducer(
        _ entry: CatalogueEntry, _ pending: PendingRun, server: RangeServer, observed: String
    ) -> Reproducer {
        var settings = Reproducer.Server(
            scenariosDirectory: MatrixRunner.absolute(server.configuration.scenariosDirectory ?? "fixtures/scenarios"),
            root: MatrixRunner.absolute(server.configuration.root))
        settings.host = server.configuration.host
        if let host = pending.urls.first.flatMap({ URLComponents(string: $0.url)?.host }), !host.isEmpty {
            settings.urlHost = host.contains(":") ? "[\(host)]" : host
        }
        settings.scheme = MatrixScheme(rawValue: pending.scheme) ?? .http
        settings.certificateAuthority = settings.scheme.isTLS || entry.redirectsToTLS
        let directory = "rangecheck-repro/\(entry.name)"
        let job = Reproducer.job(entry: entry, run: pending.run, server: settings, directory: directory)
        return Reproducer.make(
            entry: entry, run: pending.run, job: job, client: .remote(label: pending.client), server: settings,
            directory: directory,
            expectedSHA256: entry.expectedLength <= 1 << 30
                ? entry.expectedContent.sha256(version: entry.expectedVersion) : nil,
            observed: observed)
    }

    /// The facts the judge reads: the journal, the reported outputs and what the run was handed.
    private static func facts(
        _ entry: CatalogueEntry, _ pending: PendingRun, _ journal: [JournalEntry], _ outputs: [OutputFacts],
        _ exit: ClientExit
    ) -> RunFacts {
        let prefilled = pending.steps.first { $0.prefill != nil }?.bytes ?? 0
        // Not guessed from the journal: a killed client's last response runs on until the server notices, beside the
        // restarted one, and would read as a second connection.
        let segmented = pending.segmented ?? false
        return RunFacts(
            entries: journal, outputs: outputs, resourceLength: entry.expectedLength,
            expectedVersion: entry.expectedVersion, exit: exit,
            // Without a request (a connect that never completed) the server saw nothing: from the hand-out instead.
            elapsed: span(journal).map { .milliseconds($0) } ?? (ContinuousClock.now - pending.created),
            prefilledBytes: prefilled, segmented: segmented)
    }

    /// A step left out of `steps-done` makes the run n/a, never a pass; otherwise the judge's verdict.
    private static func cellResult(
        entry: CatalogueEntry, pending: PendingRun, report: ConformanceAPI.ResultReport, judgement: Judge.Judgement
    ) -> CellResult {
        var done = report.stepsDone ?? []
        for (step, spec) in zip(entry.expectation.steps, pending.steps) {
            guard let index = done.firstIndex(of: spec.name) else {
                return .notApplicable("the client did not perform the \(MatrixRunner.describe(step)) step")
            }
            done.remove(at: index)
        }
        if entry.expectation.diskFullSize != nil && report.diskFullOutcome == nil {
            return .notApplicable("the client did not report disk-full-outcome, how its run on the full disk ended")
        }
        return judgement.result
    }

    /// From the first request's arrival to the last response's end, in milliseconds; nil without requests.
    static func span(_ journal: [JournalEntry]) -> Int64? {
        let starts = journal.compactMap { JournalAnalysis.milliseconds($0.arrivalTime) }
        let ends = journal.compactMap { JournalAnalysis.milliseconds($0.time) }
        guard let first = starts.min(), let last = ends.max() else { return nil }
        return max(0, last - first)
    }
}
