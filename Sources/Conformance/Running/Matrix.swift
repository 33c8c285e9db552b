/// The result of one (scenario, client) pair.
public enum CellResult: Hashable, Sendable {
    /// Every expectation held.
    case pass
    /// An expectation failed; the reason is one line.
    case fail(String)
    /// The client is not available here (not installed, not built); never counted as pass or fail.
    case skipped(String)
    /// The scenario asks for a step or shape the client cannot express; never counted as a pass.
    case notApplicable(String)

    /// `pass`, `FAIL`, `skipped` or `n/a`.
    public var label: String {
        switch self {
        case .pass: "pass"
        case .fail: "FAIL"
        case .skipped: "skipped"
        case .notApplicable: "n/a"
        }
    }

    /// The reason, empty for a pass.
    public var reason: String {
        switch self {
        case .pass: ""
        case .fail(let reason), .skipped(let reason), .notApplicable(let reason): reason
        }
    }

    /// Whether this is a failure.
    public var isFailure: Bool { if case .fail = self { true } else { false } }
}

/// One cell of the matrix.
public struct MatrixCell: Hashable, Sendable {
    /// The scenario (row).
    public var scenario: String
    /// The client (column).
    public var client: String
    /// The verdict.
    public var result: CellResult
    /// How long the run took, when it ran.
    public var elapsed: Duration?
    /// What the run looked like (its requests and outputs), for the picture; nil for a pair that did not run.
    public var trace: RunTrace?
    /// One-line facts about the run that do not decide the verdict but belong beside it, in order (`re-run 2 times
    /// by the harness ...`); every report shows them.
    public var notes: [String]
    /// The judge's violations with their grades, most important first; empty for a pass, and for a failure the
    /// judge did not decide (a timeout, a harness error), which is graded `fail`.
    public var reasons: [Violation]
    /// How the cell compares with a `--baseline` (new, worse, fixed or the same); nil without a baseline.
    package var baseline: Baseline.Change?
    /// How to reproduce the cell by hand; set for a failure whose run the harness started, nil otherwise.
    public var reproducer: Reproducer?

    /// Makes a cell.
    ///
    /// - Parameters:
    ///   - scenario: the row.
    ///   - client: the column.
    ///   - result: the verdict.
    ///   - elapsed: the run's duration.
    ///   - trace: the run's requests and outputs.
    ///   - notes: facts shown beside the verdict.
    ///   - reasons: the violations with their grades.
    ///   - reproducer: how to reproduce it by hand.
    public init(
        scenario: String, client: String, result: CellResult, elapsed: Duration? = nil, trace: RunTrace? = nil,
        notes: [String] = [], reasons: [Violation] = [], reproducer: Reproducer? = nil
    ) {
        self.scenario = scenario
        self.client = client
        self.result = result
        self.elapsed = elapsed
        self.trace = trace
        self.notes = notes
        self.reasons = reasons
        self.reproducer = reproducer
    }

    /// The cell's grade: `pass`, the worst of its violations for a failure (`fail` when it has none), nil for a
    /// pair skipped or not applicable.
    public var grade: Grade? {
        switch result {
        case .pass: .pass
        case .fail: reasons.isEmpty ? .fail : Violation.worst(reasons)
        case .skipped, .notApplicable: nil
        }
    }

    /// The label reports show: `pass`, the grade in capitals (`CORRUPT`, `FAIL`, `UNSAFE`, `COSTLY`), `skipped` or
    /// `n/a`.
    public var label: String { grade?.label ?? result.label }
}

/// Counts of one client's column.
public struct ClientSummary: Hashable, Sendable {
    /// The client.
    public var client: String
    /// Cells that passed.
    public var passed = 0
    /// Cells that failed, whatever their grade.
    public var failed = 0
    /// Cells skipped because the client is unavailable.
    public var skipped = 0
    /// Cells the client cannot express.
    public var notApplicable = 0
    /// Failed cells by grade (`corrupt`, `fail`, `unsafe`, `costly`).
    public var graded: [Grade: Int] = [:]

    /// `curl: 28 pass, 9 corrupt, 11 unsafe, 6 fail, 1 costly, 3 n/a`: every grade (``Grade/summaryOrder``), then
    /// the skipped cells when there are any.
    public var line: String {
        var parts = ["\(passed) pass"]
        for grade in Grade.summaryOrder { parts.append("\(graded[grade] ?? 0) \(grade.rawValue)") }
        if skipped > 0 { parts.append("\(skipped) skipped") }
        parts.append("\(notApplicable) n/a")
        return "\(client): " + parts.joined(separator: ", ")
    }
}

/// Scenarios as rows, clients as columns.
public struct Matrix: Hashable, Sendable {
    /// Row order.
    public var scenarios: [String]
    /// Column order.
    public var clients: [String]
    /// The cells that were run; a pair outside the shard has no cell.
    public var cells: [MatrixCell]
    /// How each client was invoked, by client name.
    public var invocations: [String: String]
    /// The command line that produced the matrix, for reports.
    public var command: String
    /// The scheme every scenario was handed out with: `http`, or `https` for a `--tls` run. Reports show it, so an
    /// http and an https run of the same catalogue are not confused.
    public var scheme: String
    /// What each scenario exercises, by scenario name, for the reports.
    public var descriptions: [String: String]
    /// Why the run stopped before every pair had run (`interrupted by SIGTERM after 3 of 12 pairs`), or nil for a
    /// run that finished. Every report shows it in its header: the cells are then only the pairs that finished.
    public var interruption: String?
    /// The `--baseline` file the cells were compared with (``MatrixCell/baseline``), or nil.
    public var baseline: String?
    /// What each row rests on (its RFC sections and the reports of its failure), by scenario name, for the
    /// reports; a row without an entry shows none.
    package var references: [String: RowReferences] = [:]
    /// Each client's version as it printed it (`7.88.1`), by client name, for the columns that have a version
    /// command; reports show it beside the column's name.
    public var versions: [String: String] = [:]

    /// Makes a matrix.
    ///
    /// - Parameters:
    ///   - scenarios: row order.
    ///   - clients: column order.
    ///   - cells: the cells.
    ///   - invocations: how each client was invoked.
    ///   - command: the command line.
    ///   - scheme: `http` or `https`.
    ///   - descriptions: each scenario's description, by name.
    ///   - interruption: why the run stopped early, if it did.
    public init(
        scenarios: [String], clients: [String], cells: [MatrixCell], invocations: [String: String] = [:],
        command: String = "", scheme: String = "http", descriptions: [String: String] = [:],
        interruption: String? = nil
    ) {
        self.scenarios = scenarios
        self.clients = clients
        self.cells = cells
        self.invocations = invocations
        self.command = command
        self.scheme = scheme
        self.descriptions = descriptions
        self.interruption = interruption
    }

    /// The cell of a pair, if it was run.
    ///
    /// - Parameters:
    ///   - scenario: the row.
    ///   - client: the column.
    /// - Returns: the cell.
    public func cell(scenario: String, client: String) -> MatrixCell? {
        cells.first { $0.scenario == scenario && $0.client == client }
    }

    /// The counts of every client, in column order.
    public var summaries: [ClientSummary] {
        clients.map { client in
            var summary = ClientSummary(client: client)
            for cell in cells where cell.client == client {
                switch cell.result {
                case .pass: summary.passed += 1
                case .fail:
                    summary.failed += 1
                    summary.graded[cell.grade ?? .fail, default: 0] += 1
                case .skipped: summary.skipped += 1
                case .notApplicable: summary.notApplicable += 1
                }
            }
            return summary
        }
    }

    /// Whether a gating client (by default `engine` and `rangefetch`) has a cell graded `threshold` or worse.
    ///
    /// - Parameters:
    ///   - gating: the clients whose failures fail the run; the others are informational.
    ///   - threshold: the least grade that fails the run; `costly`, the default, fails on anything worse than pass.
    /// - Returns: true when the run should exit non-zero.
    public func hasGatingFailure(gating: Set<String> = Matrix.gatingClients, threshold: Grade = .costly) -> Bool {
        cells.contains { cell in
            gating.contains(cell.client) && cell.result.isFailure && (cell.grade ?? .fail) >= max(threshold, .costly)
        }
    }

    /// The cells of gating clients graded worse than in the baseline, and `threshold` or worse: with `--baseline`,
    /// the only ones that fail the run. Cells the baseline lacks are new and never among them.
    ///
    /// - Parameters:
    ///   - gating: the clients whose cells can fail the run.
    ///   - threshold: the least grade that fails it.
    /// - Returns: the cells, in row then column order.
    public func regressions(gating: Set<String> = Matrix.gatingClients, threshold: Grade = .costly) -> [MatrixCell] {
        Report.orderedCells(self).filter { cell in
            guard gating.contains(cell.client), case .worse = cell.baseline else { return false }
            return (cell.grade ?? .pass) >= max(threshold, .costly)
        }
    }

    /// The clients whose failures make `rangecheck` exit non-zero.
    ///
    /// The segmented columns (`engine-x4`, `rangefetch-x4`) are informational: AsyncHTTPClient drops body parts it
    /// has read but not yet handed over when a connection closes mid-body, and with four connections on two event
    /// loops that happens often enough on `probabilistic-drop` that the resume refetches up to 256 KiB the server
    /// had sent (docs/conformance.md).
    public static let gatingClients: Set<String> = ["engine", "rangefetch"]
}
