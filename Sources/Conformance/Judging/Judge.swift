import RangeServer

/// Decides whether one run met its expectation: a pure function of the expectation and the run's facts.
///
/// Besides what the expectation asks for, two rules always hold: an If-Range never carries a weak ETag, and a
/// Retry-After is honoured. A Range past the bytes already received breaks no rule by itself (a hole shows in the
/// output, a refetch in the cost): the cell notes it. For a segmented client (several connections per file) under
/// `resume-range` `exact`, a Range never starts inside bytes already received of the same representation.
public enum Judge {
    /// What the judge found in one run: the violations, which decide the verdict, and notes, facts worth showing
    /// beside it that decide nothing (the harness re-ran the client, ...).
    public struct Judgement: Hashable, Sendable {
        /// Every violation with its grade, most important first; empty means pass.
        public var reasons: [Violation]
        /// One-line facts for the cell (``MatrixCell/notes``), in order.
        public var notes: [String]

        /// Makes a judgement.
        ///
        /// - Parameters:
        ///   - reasons: the violations, most important first.
        ///   - notes: the notes.
        public init(reasons: [Violation], notes: [String] = []) {
            self.reasons = reasons
            self.notes = notes
        }

        /// Every violation's reason, in order.
        public var violations: [String] { reasons.map(\.reason) }

        /// The worst grade of the violations: `pass` for none.
        public var grade: Grade { Violation.worst(reasons) }

        /// `pass`, or `fail` with the first violation of the worst grade (and how many more there are).
        public var result: CellResult {
            guard let first = reasons.first(where: { $0.grade == grade }) else { return .pass }
            return .fail(reasons.count == 1 ? first.line : "\(first.line) (+\(reasons.count - 1) more)")
        }
    }

    /// Judges one run: its violations, and notes on it.
    ///
    /// Every request is held to the rules, whichever start of the client made it; the bounds (`max-requests`,
    /// `max-refetched`, `min-elapsed`, `max-elapsed`) count only the client's own starts: what a harness re-run
    /// (``ClientLaunch/Reason/harnessRerun``) asked for and the time it took are left out, and a note says so.
    ///
    /// - Parameters:
    ///   - expectation: what the scenario expects.
    ///   - facts: what happened.
    /// - Returns: the violations, most important first, and the notes.
    public static func judgement(of expectation: ScenarioExpectation, in facts: RunFacts) -> Judgement {
        var reasons: [Violation] = []
        let diskFull = diskFullFindings(facts)
        reasons += diskFull.reasons
        // Where a client put its file comes before what the file holds: "saved under another name" explains a
        // missing output.
        let serverNamed = serverNamedFindings(facts)
        reasons += serverNamed.reasons
        reasons += outcomeViolations(expectation, facts)
        // Without launches (a client judged by the service, whose tester performs the steps) the harness cannot
        // tell when a kill or pause came: in a row with such a step, a response left past the probe limit is taken
        // to be the step's doing.
        let stepsUnseen =
            facts.launches.isEmpty
            && expectation.steps.contains {
                if case .killAndRestart = $0 { true } else if case .pause = $0 { true } else { false }
            }
        let left = facts.entries.filter {
            $0.method == "GET" && $0.abandoned && !facts.endedByStep($0)
                && !(stepsUnseen && $0.bodyBytesSent >= JournalAnalysis.probeLimit)
        }
        let probes = left.filter { $0.bodyBytesSent < JournalAnalysis.probeLimit }
        let probeSeqs = Set(probes.map(\.seq))
        let analysis = JournalAnalysis(
            entries: facts.entries, multipleFiles: expectation.files.count > 1, prefilled: facts.prefilledBytes,
            rangeRule: expectation.range, ifRangeRule: expectation.ifRange, segmented: facts.segmented,
            probes: probeSeqs, leftByClient: Set(left.map(\.seq)))
        reasons += analysis.violations
        let rerun = facts.entries.filter { facts.isHarnessRerun($0) }
        let rerunSeqs = Set(rerun.map(\.seq))
        // `max-requests` is judged on the download: probes are counted apart, in a note.
        let requests = facts.entries.filter {
            $0.method == "GET" && !rerunSeqs.contains($0.seq) && !probeSeqs.contains($0.seq)
        }.count
        // A segmented client's request count follows its own split (axel -n 4 asks for five ranges of a
        // plain file), so the bound, written for one connection, holds only for single-stream clients.
        if let maximum = expectation.maxRequests, !facts.segmented, requests > maximum {
            reasons.append(Violation("\(requests) requests, at most \(maximum) allowed", grade: .costly))
        }
        // The bound is per connection: a segmented client killed or paused loses what each of its connections
        // had on the way, not what one had.
        let connections = facts.segmented ? UInt64(max(1, JournalAnalysis.peakOpenRequests(facts.entries))) : 1
        let rerunRefetched = rerunSeqs.reduce(0) { $0 + (analysis.refetchedBytesBySeq[$1] ?? 0) }
        let lostToFullDisk = segmentedFullDiskRewinds(facts, refetchedBySeq: analysis.refetchedBytesBySeq)
        let excused = rerunRefetched + analysis.rewoundBytes + lostToFullDisk
        let refetched = analysis.refetchedBytes - min(analysis.refetchedBytes, excused)
        if let maximum = expectation.maxRefetched, refetched > maximum * connections {
            let bound =
                ByteSize.format(maximum * connections) + (connections > 1 ? " (\(connections) connections)" : "")
            reasons.append(
                Violation("\(ByteSize.format(refetched)) fetched twice, at most \(bound) allowed", grade: .costly))
        }
        let elapsed = facts.clientElapsed
        if let minimum = expectation.minElapsed, elapsed < minimum {
            reasons.append(
                Violation("finished in \(seconds(elapsed)), expected at least \(seconds(minimum))", grade: .costly))
        }
        if let maximum = expectation.maxElapsed, elapsed > maximum {
            // Below a hang (the row's time limit, graded `fail`): slow, not wrong.
            reasons.append(Violation("took \(seconds(elapsed)), expected at most \(seconds(maximum))", grade: .costly))
        }
        if let maximum = expectation.maxConnections {
            let fromJournal = analysis.simultaneousConnections
            let peak = max(fromJournal, facts.observedPeakConnections ?? 0)
            if peak > maximum {
                // Say where the peak was seen: a socket the runner sampled open may have carried no request (a
                // connection opened while another was on its way back to the client's pool), which the journal,
                // recording requests only, cannot show.
                let source = peak > fromJournal ? " (sampled open; \(fromJournal) with requests at once)" : ""
                reasons.append(
                    Violation("\(peak) connections at once\(source), at most \(maximum) allowed", grade: .costly))
            }
        }
        var notes =
            diskFull.notes + serverNamed.notes + deadIPv6Notes(facts) + launchNotes(facts, rerunRequests: rerun.count)
        if !probes.isEmpty {
            let bytes = probes.reduce(0) { $0 + $1.bodyBytesSent }
            notes.append(
                "\(probes.count) probe\(probes.count == 1 ? "" : "s") (a GET the client read briefly and closed, "
                    + "\(ByteSize.format(bytes)) sent) not counted against the bounds")
        }
        if lostToFullDisk > 0 {
            notes.append(
                "resumed its segments inside what the server had sent before the disk filled: "
                    + "\(ByteSize.format(lostToFullDisk)) it had no room for fetched again, a cost not counted against "
                    + "max-refetched")
        }
        for skip in analysis.skipsAhead {
            notes.append("\(skip): no rule broken by itself (a hole would show in the output)")
        }
        if analysis.rewinds > 0 {
            notes.append(
                "resumed before the bytes received \(analysis.rewinds) time\(analysis.rewinds == 1 ? "" : "s") "
                    + "(from what it had written): \(ByteSize.format(analysis.rewoundBytes)) fetched twice, a cost "
                    + "not counted against max-refetched")
        }
        let restarts = left.count - probes.count
        if restarts > 0 {
            notes.append(
                "closed \(restarts) response\(restarts == 1 ? "" : "s") past \(ByteSize.format(JournalAnalysis.probeLimit)) "
                    + "itself, no fault or kill behind it (what it fetched again counts as refetched)")
        }
        return Judgement(reasons: reasons, notes: notes)
    }

    /// Judges one run.
    ///
    /// - Parameters:
    ///   - expectation: what the scenario expects.
    ///   - facts: what happened.
    /// - Returns: every violation as a one-line reason, most important first; empty means pass.
    public static func violations(of expectation: ScenarioExpectation, in facts: RunFacts) -> [String] {
        judgement(of: expectation, in: facts).violations
    }

    /// The verdict of one run as a report cell.
    ///
    /// - Parameters:
    ///   - expectation: what the scenario expects.
    ///   - facts: what happened.
    /// - Returns: `pass`, or `fail` with the first reason (and how many more there are).
    public static func verdict(of expectation: ScenarioExpectation, in facts: RunFacts) -> CellResult {
        judgement(of: expectation, in: facts).result
    }

    /// The note on a run's launches: `re-run 2 times by the harness (after exit 7, 7): 3 requests and 2.104s not
    /// counted against the bounds`; none when the harness re-ran nothing.
    private static func launchNotes(_ facts: RunFacts, rerunRequests: Int) -> [String] {
        let count = facts.harnessReruns.count
        guard count > 0 else { return [] }
        // The exit each re-run answered: that of the launch just before it.
        let exits = facts.launches.indices.compactMap { index -> String? in
            guard index > 0, facts.launches[index].reason == .harnessRerun else { return nil }
            return facts.launches[index - 1].exitStatus.map(String.init) ?? "?"
        }
        return [
            "re-run \(count) time\(count == 1 ? "" : "s") by the harness (after exit \(exits.joined(separator: ", "))): "
                + "\(rerunRequests) request\(rerunRequests == 1 ? "" : "s") and \(seconds(facts.harnessRerunTime)) "
                + "not counted against the bounds"
        ]
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return "\(milliseconds / 1000).\(String(format3(milliseconds % 1000)))s"
    }

    private static func format3(_ value: Int64) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 3 - text.count)) + text
    }

    private static func outcomeViolations(_ expectation: ScenarioExpectation, _ facts: RunFacts) -> [Violation] {
        switch expectation.outcome {
        case .success:
            guard facts.exit == .success else {
                return [Violation("client reported \(facts.exit.summary) where success was expected", grade: .fail)]
            }
            return facts.outputs.flatMap { contentViolations($0, expectation, facts) }
        case .intact:
            switch facts.exit {
            case .success:
                return facts.outputs.flatMap { contentViolations($0, expectation, facts) }
            case .failure:
                // Left in place under the output's name, bytes that no resume can build on: corrupt, unlike a
                // correct prefix.
                return facts.outputs.compactMap { output in
                    guard output.exists, let bad = output.segments.first(where: { $0.version == nil }) else {
                        return nil
                    }
                    return Violation(
                        "failed, leaving bytes of \(output.name) that are not the representation at offset "
                            + "\(bad.range.lowerBound)", grade: .corrupt)
                }
            default:
                return [
                    Violation(
                        "client reported \(facts.exit.summary) where success or a clean failure was expected",
                        grade: .fail)
                ]
            }
        case .cancelled:
            var reasons: [Violation] = []
            if facts.exit != .cancelled {
                reasons.append(Violation("client reported \(facts.exit.summary), not cancelled", grade: .fail))
            }
            reasons += leftovers(expectation, facts)
            return reasons
        case .failure(let kind):
            guard case .failure = facts.exit else {
                // Success where the download had to fail: what it kept is an error page's body, a redirect's, or
                // what came over a connection it should not have trusted.
                let grade: Grade = facts.exit == .success ? .corrupt : .fail
                return [
                    Violation("client reported \(facts.exit.summary) where failure \(kind) was expected", grade: grade)
                ]
            }
            var reasons: [Violation] = []
            let gets = facts.entries.filter { $0.method == "GET" }
            if kind == "too-many-redirects" {
                // At least 3: the first URL, then each of the two the loop alternates between. A client that
                // detects the loop stops when it is sent back to a URL it already asked for (apt: "Redirection loop
                // encountered" after 3), which is the cycle detection RFC 9110 §15.4 asks for; fewer did not
                // follow the redirects at all.
                let redirects = gets.filter { (300...399).contains($0.status) }.count
                if redirects != gets.count || redirects < 3 {
                    reasons.append(
                        Violation(
                            "failed, but not after redirects only (\(redirects) of \(gets.count) responses)",
                            grade: .fail))
                }
            } else if kind == "tls" {
                reasons += tlsFailureViolations(gets).map { Violation($0, grade: .fail) }
            } else if kind.hasPrefix("http-"), let status = Int(kind.dropFirst(5)) {
                if let last = gets.last, last.status != status {
                    reasons.append(
                        Violation("failed after a \(last.status) response, expected \(status)", grade: .fail))
                } else if gets.isEmpty {
                    reasons.append(
                        Violation("failed without any request, expected a \(status) response", grade: .fail))
                }
            }
            return reasons + leftovers(expectation, facts)
        }
    }

    /// `failure: tls`: the last response sent the client to an `https:` URL (a TLS fault listener, where no request
    /// is journaled), so the failure happened there and not before it.
    private static func tlsFailureViolations(_ gets: [JournalEntry]) -> [String] {
        guard let last = gets.last else { return ["failed without any request, expected a redirect to https first"] }
        guard (300...399).contains(last.status) else {
            return ["failed after a \(last.status) response, expected a redirect to https last"]
        }
        let location = last.responseHeaders["location"] ?? ""
        guard location.lowercased().hasPrefix("https://") else {
            return ["failed after a redirect to \(location.isEmpty ? "nowhere" : location), expected one to https"]
        }
        return []
    }

    private static func leftovers(_ expectation: ScenarioExpectation, _ facts: RunFacts) -> [Violation] {
        guard expectation.leavesNoOutput else { return [] }
        // The client reported its failure, so what it left is not presented as complete.
        return facts.outputs.filter { $0.exists && $0.size > 0 }.map {
            Violation("left \($0.name) behind (\(ByteSize.format($0.size)))", grade: .fail)
        }
    }

    /// What is wrong with an output the client presented as complete: wrong bytes are `corrupt`, no output `fail`.
    private static func contentViolations(
        _ output: OutputFacts, _ expectation: ScenarioExpectation, _ facts: RunFacts
    )
        -> [Violation]
    {
        guard output.exists else { return [Violation("output \(output.name) is missing", grade: .fail)] }
        if let digest = expectation.sha256 {
            guard let actual = output.sha256 else {
                return [Violation("SHA-256 of \(output.name) was not computed", grade: .fail)]
            }
            return actual == digest
                ? [] : [Violation("SHA-256 \(actual.prefix(12))…, expected \(digest.prefix(12))…", grade: .corrupt)]
        }
        let expected = facts.expectedVersion
        let versions = Set(output.segments.compactMap(\.version))
        var reasons: [String] = []
        if versions.count > 1 {
            let parts = output.segments.prefix(4).map { segment in
                "\(segment.range.lowerBound)-\(segment.range.upperBound - 1) "
                    + (segment.version.map { "v\($0)" } ?? "unknown")
            }
            reasons.append("spliced versions: " + parts.joined(separator: ", "))
        } else if let only = versions.first, only != expected {
            reasons.append("content is version \(only), expected version \(expected)")
        } else if let bad = output.segments.first(where: { $0.version == nil }) {
            reasons.append("bytes differ from version \(expected) at offset \(bad.range.lowerBound)")
        }
        if output.size != facts.resourceLength {
            reasons.append("\(output.name) is \(output.size) bytes, expected \(facts.resourceLength)")
        }
        return reasons.map { Violation($0, grade: .corrupt) }
    }
}
