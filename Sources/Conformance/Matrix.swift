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

    /// Makes a cell.
    ///
    /// - Parameters:
    ///   - scenario: the row.
    ///   - client: the column.
    ///   - result: the verdict.
    ///   - elapsed: the run's duration.
    ///   - trace: the run's requests and outputs.
    ///   - notes: facts shown beside the verdict.
    public init(
        scenario: String, client: String, result: CellResult, elapsed: Duration? = nil, trace: RunTrace? = nil,
        notes: [String] = []
    ) {
        self.scenario = scenario
        self.client = client
        self.result = result
        self.elapsed = elapsed
        self.trace = trace
        self.notes = notes
    }
}

/// Counts of one client's column.
public struct ClientSummary: Hashable, Sendable {
    /// The client.
    public var client: String
    /// Cells that passed.
    public var passed = 0
    /// Cells that failed.
    public var failed = 0
    /// Cells skipped because the client is unavailable.
    public var skipped = 0
    /// Cells the client cannot express.
    public var notApplicable = 0

    /// `engine: 20 passed, 1 failed, 0 skipped, 3 n/a`.
    public var line: String {
        "\(client): \(passed) passed, \(failed) failed, \(skipped) skipped, \(notApplicable) n/a"
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
                case .fail: summary.failed += 1
                case .skipped: summary.skipped += 1
                case .notApplicable: summary.notApplicable += 1
                }
            }
            return summary
        }
    }

    /// Whether a gating client (by default `engine` and `rangefetch`) failed any scenario.
    ///
    /// - Parameters:
    ///   - gating: the clients whose failures fail the run; the others are informational.
    /// - Returns: true when the run should exit non-zero.
    public func hasGatingFailure(gating: Set<String> = Matrix.gatingClients) -> Bool {
        cells.contains { gating.contains($0.client) && $0.result.isFailure }
    }

    /// The clients whose failures make `rangecheck` exit non-zero.
    ///
    /// The segmented columns (`engine-x4`, `rangefetch-x4`) are informational: AsyncHTTPClient drops body parts it
    /// has read but not yet handed over when a connection closes mid-body, and with four connections on two event
    /// loops that happens often enough on `probabilistic-drop` that the resume refetches up to 256 KiB the server
    /// had sent (docs/conformance.md).
    public static let gatingClients: Set<String> = ["engine", "rangefetch"]
}
