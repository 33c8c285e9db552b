import Foundation

/// One client at one version in the public results table: `docs/results/CLIENT@VERSION.json`, written by `rangecheck
/// results record` from the `--json --json-traces` reports of its runs (docs/conformance.md, "The results table").
///
/// A new version of a client adds a file; recording the same version again replaces the runs of the schemes recorded
/// and keeps the others. Every cell keeps its grade, reasons, notes and reproducer, and the run's facts as a
/// ``CompactTrace``, from which the results page draws its picture.
package struct ResultsFile: Codable, Hashable, Sendable {
    /// The layout's version: 1.
    public var format = 1
    /// The column's name.
    public var client: String
    /// The version it printed (`7.88.1`), or for a column without a version command (this project's own) the
    /// commit it was built from.
    public var version: String
    /// Who downloads through it, from its definition.
    public var description: String?
    /// What installs it (`apt-get install curl`, `pip install yt-dlp`).
    public var package: String?
    /// How the harness invoked it.
    public var invocation: String?
    /// The runs by scheme: `http`, `https`.
    public var runs: [String: Run]

    /// Makes a file.
    ///
    /// - Parameters:
    ///   - client: the column.
    ///   - version: its version.
    ///   - description: who downloads through it.
    ///   - package: what installs it.
    ///   - invocation: how it was invoked.
    ///   - runs: the runs by scheme.
    public init(
        client: String, version: String, description: String? = nil, package: String? = nil,
        invocation: String? = nil, runs: [String: Run]
    ) {
        self.client = client
        self.version = version
        self.description = description
        self.package = package
        self.invocation = invocation
        self.runs = runs
    }

    /// One run of the catalogue over one scheme.
    public struct Run: Codable, Hashable, Sendable {
        /// When it was recorded, `YYYY-MM-DD` (UTC).
        public var recorded: String
        /// The commit of this repository the harness was built from (`+changes` when the tree had changes).
        public var commit: String
        /// The rangecheck command line.
        public var command: String
        /// Where the reproducers run: each cell's in `REPRODUCTIONS/SCENARIO/CLIENT`, written `{dir}` in them.
        public var reproductions: String?
        /// Every row, in the catalogue's order.
        public var cells: [Cell]

        /// Makes a run.
        ///
        /// - Parameters:
        ///   - recorded: the day.
        ///   - commit: the commit.
        ///   - command: the command line.
        ///   - reproductions: where its reproductions run.
        ///   - cells: the cells.
        public init(recorded: String, commit: String, command: String, reproductions: String? = nil, cells: [Cell]) {
            self.recorded = recorded
            self.commit = commit
            self.command = command
            self.reproductions = reproductions
            self.cells = cells
        }
    }

    /// One row of the column.
    public struct Cell: Codable, Hashable, Sendable {
        /// The scenario.
        public var scenario: String
        /// `pass`, `corrupt`, `fail`, `unsafe`, `costly`, `n/a` or `skipped`.
        public var grade: String
        /// The headline reason; absent for a pass.
        public var reason: String?
        /// Every violation with its grade, when there is more than one.
        public var reasons: [Violation]?
        /// Facts beside the verdict.
        public var notes: [String]?
        /// How long the run took, in seconds.
        public var seconds: Double?
        /// The run token the cell was judged under (the journal's `run`), written `{run}` in its reproducer.
        public var run: String?
        /// How to reproduce a failed cell by hand, its paths relative to a checkout, its directory written `{dir}`
        /// and its run token `{run}` (so what every cell of a column shares is the same text), and its `observed`
        /// left empty (it is the reason): ``reproducer(in:client:)`` gives it whole.
        public var reproducer: Reproducer?
        /// What the run did, for the picture.
        public var trace: CompactTrace?

        /// The grade as a ``Grade``; nil for `n/a` and `skipped`.
        public var graded: Grade? { Grade(rawValue: grade) }

        /// `pass`, the grade in capitals, `n/a` or `skipped`: the label the reports show.
        public var label: String { graded?.label ?? grade }

        /// The reproducer whole: `{dir}` and `{run}` filled in, and what the run did.
        ///
        /// - Parameters:
        ///   - run: the run the cell belongs to.
        ///   - client: the column.
        /// - Returns: the reproducer, nil for a cell without one.
        public func reproducer(in run: Run, client: String) -> Reproducer? {
            guard var reproducer else { return nil }
            let directory = Self.directory(reproductions: run.reproductions, scenario: scenario, client: client)
            reproducer.map { text in
                text.replacingOccurrences(of: Self.directoryMark, with: directory)
                    .replacingOccurrences(of: Self.runMark, with: self.run ?? Self.runMark)
            }
            if reproducer.compare.observed.isEmpty { reproducer.compare.observed = reason ?? "" }
            return reproducer
        }

        /// `{dir}`: a reproducer's directory in a results file.
        public static let directoryMark = "{dir}"
        /// `{run}`: a reproducer's run token in a results file.
        public static let runMark = "{run}"

        /// `REPRODUCTIONS/SCENARIO/CLIENT`, where the harness puts a cell's reproduction.
        static func directory(reproductions: String?, scenario: String, client: String) -> String {
            "\(reproductions ?? "/tmp/rangecheck-repro")/\(scenario)/\(client)"
        }
    }

    /// `CLIENT@VERSION.json`, with any character outside letters, digits, `.`, `_`, `+`, `-` as `_`.
    public var fileName: String {
        let safe = { (text: String) in
            String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || ".+_-".contains($0)) ? $0 : "_" })
        }
        return "\(safe(client))@\(safe(version)).json"
    }

    /// The file's text: the header pretty-printed, each cell on one line, so a new run's diff shows the cells that
    /// changed and the file stays small.
    ///
    /// - Returns: the JSON, ending with a newline.
    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func line(_ value: some Encodable) -> String {
            // Strings, integers, finite numbers and booleans only: encoding cannot fail.
            String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
        }
        var text = "{\n  \"format\": \(format),\n  \"client\": \(line(client)),\n  \"version\": \(line(version)),\n"
        if let description { text += "  \"description\": \(line(description)),\n" }
        if let package { text += "  \"package\": \(line(package)),\n" }
        if let invocation { text += "  \"invocation\": \(line(invocation)),\n" }
        text += "  \"runs\": {"
        text += runs.keys.sorted().map { scheme in
            let run = runs[scheme]!
            var part = "\n    \(line(scheme)): {\n      \"recorded\": \(line(run.recorded)),\n"
            part += "      \"commit\": \(line(run.commit)),\n      \"command\": \(line(run.command)),\n"
            if let reproductions = run.reproductions { part += "      \"reproductions\": \(line(reproductions)),\n" }
            let (shared, cells) = run.diskForm()
            if !shared.isEmpty { part += "      \"shared\": \(line(shared)),\n" }
            part += "      \"cells\": [\n"
            part += cells.map { "        " + line($0) }.joined(separator: ",\n")
            return part + "\n      ]\n    }"
        }.joined(separator: ",")
        text += "\n  }\n}\n"
        return text
    }

    /// Reads a results file.
    ///
    /// - Parameters:
    ///   - data: the file's bytes.
    ///   - path: its path, for the error.
    /// - Returns: the file.
    /// - Throws: `ConformanceError.invalidArgument` naming the file.
    public static func decode(_ data: Data, path: String) throws(ConformanceError) -> ResultsFile {
        do {
            // Parsed once without `Decodable` to put the shared parts back (see `JSONValue.init(json:)`); data that
            // is not JSON goes straight to the decoder, whose error names where it broke.
            guard let value = try? JSONValue(json: data) else {
                return try JSONDecoder().decode(ResultsFile.self, from: data)
            }
            let filled = try JSONEncoder().encode(Run.filled(file: value))
            return try JSONDecoder().decode(ResultsFile.self, from: filled)
        } catch {
            throw .invalidArgument("\(path): not a results file (\(ResultsFile.describe(error)))")
        }
    }

    /// A decoding error in one line: the key path and what was wrong.
    static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let at = path(context.codingPath)
            return (at.isEmpty ? "" : "\(at): ") + context.debugDescription
        default: return "\(error)"
        }
    }
}
