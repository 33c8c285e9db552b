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

    /// Makes a cell.
    ///
    /// - Parameters:
    ///   - scenario: the row.
    ///   - client: the column.
    ///   - result: the verdict.
    ///   - elapsed: the run's duration.
    public init(scenario: String, client: String, result: CellResult, elapsed: Duration? = nil) {
        self.scenario = scenario
        self.client = client
        self.result = result
        self.elapsed = elapsed
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

    /// Makes a matrix.
    ///
    /// - Parameters:
    ///   - scenarios: row order.
    ///   - clients: column order.
    ///   - cells: the cells.
    ///   - invocations: how each client was invoked.
    ///   - command: the command line.
    public init(
        scenarios: [String], clients: [String], cells: [MatrixCell], invocations: [String: String] = [:],
        command: String = ""
    ) {
        self.scenarios = scenarios
        self.clients = clients
        self.cells = cells
        self.invocations = invocations
        self.command = command
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
    public static let gatingClients: Set<String> = ["engine", "rangefetch"]
}

/// A deterministic slice of the work, `--shard I/N`.
public struct Shard: Hashable, Sendable, CustomStringConvertible {
    /// 1-based index.
    public var index: Int
    /// How many shards there are.
    public var count: Int

    /// Parses `I/N` with 1 ≤ I ≤ N.
    ///
    /// - Parameters:
    ///   - text: the flag's value.
    /// - Throws: `ConformanceError.invalidArgument` when malformed.
    public init(parsing text: String) throws(ConformanceError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, index >= 1,
            index <= count
        else { throw .invalidArgument("--shard \(text): expected I/N with 1 <= I <= N, like 2/4") }
        self.index = index
        self.count = count
    }

    /// The whole matrix.
    public static let all = try! Shard(parsing: "1/1")

    /// `I/N`.
    public var description: String { "\(index)/\(count)" }

    /// The pairs of this shard: all (scenario, client) pairs in row-major order, every `count`-th one
    /// starting at `index - 1`, so the shards are disjoint, cover everything, and balance slow rows.
    ///
    /// - Parameters:
    ///   - scenarios: the rows, in order.
    ///   - clients: the columns, in order.
    /// - Returns: the pairs to run.
    public func pairs(scenarios: [String], clients: [String]) -> [(scenario: String, client: String)] {
        var result: [(scenario: String, client: String)] = []
        var position = 0
        for scenario in scenarios {
            for client in clients {
                if position % count == index - 1 { result.append((scenario, client)) }
                position += 1
            }
        }
        return result
    }
}

/// Shell-style glob matching (`*`, `?`, `[abc]`) for `--scenario`.
public enum Glob {
    /// Whether `name` matches `pattern`; a comma separates alternatives (`plain,kill-*`).
    ///
    /// - Parameters:
    ///   - pattern: the glob.
    ///   - name: the candidate.
    /// - Returns: true on a match.
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        pattern.split(separator: ",").contains { match(Array($0), Array(name)) }
    }

    private static func match(_ pattern: [Character], _ name: [Character]) -> Bool {
        var p = 0
        var n = 0
        var star: Int?
        var resume = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = n
                p += 1
            } else if p < pattern.count, let (matched, next) = single(pattern, p, name[n]), matched {
                p = next
                n += 1
            } else if let star {
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// Matches one character against the pattern element at `p`: `?`, a bracket class, or a literal.
    private static func single(_ pattern: [Character], _ p: Int, _ character: Character) -> (Bool, Int)? {
        switch pattern[p] {
        case "?": return (true, p + 1)
        case "[":
            guard let close = pattern[(p + 1)...].firstIndex(of: "]") else { return (character == "[", p + 1) }
            return (pattern[(p + 1)..<close].contains(character), close + 1)
        default: return (pattern[p] == character, p + 1)
        }
    }
}
