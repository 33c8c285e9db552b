import Foundation

/// Turns `rangecheck --json --json-traces` reports into the results files of `docs/results/`: one
/// ``ResultsFile`` per client and version, and the rows (``ResultsRows``) the page shows.
///
/// A pure function of the reports, the files already there and the recording's facts (commit, date): paths under the
/// repository's root become relative to a checkout, so a committed reproducer works from anyone's clone.
package enum ResultsRecorder {
    /// The part of a `--json` report the recorder reads.
    public struct MatrixReport: Decodable, Sendable {
        /// The rangecheck command line.
        public var command: String
        /// `http`, `https`, `h2` or `h2c` (``MatrixScheme``).
        public var scheme: String
        /// The columns run.
        public var clients: [String]
        /// The rows, in order.
        public var scenarios: [String]
        /// Each row's description.
        public var descriptions: [String: String]
        /// Each row's references.
        public var references: [String: References]?
        /// Each column's invocation.
        public var invocations: [String: String]
        /// Each column's version.
        public var versions: [String: String]?
        /// The cells.
        public var cells: [Cell]
        /// Why the run stopped early, if it did.
        public var interruption: String?

        /// A row's `rfc` and `seen-in`.
        public struct References: Decodable, Sendable {
            /// The RFC sections.
            public var rfc: ResultsRows.Citations
            /// The reports.
            public var seenIn: ResultsRows.Citations

            private enum CodingKeys: String, CodingKey {
                case rfc
                case seenIn = "seen-in"
            }
        }

        /// One cell of the report.
        public struct Cell: Decodable, Sendable {
            /// The row.
            public var scenario: String
            /// The column.
            public var client: String
            /// `pass`, `FAIL`, `skipped` or `n/a`.
            public var result: String
            /// The grade, for a cell that ran.
            public var grade: String?
            /// The headline reason.
            public var reason: String
            /// Every violation.
            public var reasons: [Violation]
            /// The notes.
            public var notes: [String]
            /// The run's duration in seconds.
            public var seconds: Double?
            /// How to reproduce it.
            public var reproducer: Reproducer?
            /// What the run did.
            public var trace: RunTrace?
        }

        /// Reads a report.
        ///
        /// - Parameters:
        ///   - data: the report's bytes.
        ///   - path: its path, for the error.
        /// - Returns: the report.
        /// - Throws: `ConformanceError.invalidArgument` naming the file and what is wrong.
        public static func decode(_ data: Data, path: String) throws(ConformanceError) -> MatrixReport {
            do { return try JSONDecoder().decode(MatrixReport.self, from: data) } catch {
                throw .invalidArgument("\(path): not a rangecheck --json report (\(ResultsFile.describe(error)))")
            }
        }
    }

    /// What a recording knows beyond the reports.
    public struct Recording: Sendable {
        /// The commit the harness was built from.
        public var commit: String
        /// The day, `YYYY-MM-DD`.
        public var date: String
        /// The repository's root as the run saw it: paths under it become relative.
        public var repositoryRoot: String?
        /// Where the run's rangecheck, rangeserver and rangefetch were (a copy the script runs from): recorded as
        /// `.build/debug`, where a checkout builds them.
        public var products: String?
        /// Each client's definition, for its description and package.
        public var definitions: [ClientDefinition]
        /// Each scenario file's text, by scenario name.
        public var scenarioFiles: [String: String]

        /// Makes the facts.
        ///
        /// - Parameters:
        ///   - commit: the commit.
        ///   - date: the day.
        ///   - repositoryRoot: the root to make paths relative to.
        ///   - products: the directory of the products the run used.
        ///   - definitions: the client definitions.
        ///   - scenarioFiles: the scenario files' texts.
        public init(
            commit: String, date: String, repositoryRoot: String? = nil, products: String? = nil,
            definitions: [ClientDefinition] = [], scenarioFiles: [String: String] = [:]
        ) {
            self.commit = commit
            self.date = date
            self.repositoryRoot = repositoryRoot
            self.products = products
            self.definitions = definitions
            self.scenarioFiles = scenarioFiles
        }
    }

    /// The files the reports give, merged into those already there.
    ///
    /// A client whose every cell was skipped (not installed) gives no file. A file of the same client and version
    /// keeps the runs of the schemes not in the reports; the runs of those in them are replaced.
    ///
    /// - Parameters:
    ///   - reports: the reports.
    ///   - existing: the results files already there.
    ///   - recording: the commit, the date and the rest.
    /// - Returns: the files written or changed, and the rows of every report.
    /// - Throws: `ConformanceError.invalidArgument` for an interrupted report.
    public static func record(
        reports: [MatrixReport], existing: [ResultsFile], recording: Recording
    ) throws(ConformanceError) -> (files: [ResultsFile], rows: [ResultsRows.Row]) {
        var files: [String: ResultsFile] = [:]
        for file in existing { files[file.fileName] = file }
        var changed: Set<String> = []
        var rows: [String: ResultsRows.Row] = [:]
        for report in reports {
            if let interruption = report.interruption {
                throw .invalidArgument("a report of an interrupted run is not recorded (\(interruption))")
            }
            for scenario in report.scenarios {
                guard let references = report.references?[scenario] else { continue }
                rows[scenario] = ResultsRows.Row(
                    name: scenario, description: report.descriptions[scenario] ?? "", rfc: references.rfc,
                    seenIn: references.seenIn, file: recording.scenarioFiles[scenario])
            }
            for client in report.clients {
                let cells = report.cells.filter { $0.client == client }
                guard !cells.isEmpty, !cells.allSatisfy({ $0.result == "skipped" }) else { continue }
                let definition = recording.definitions.first { $0.name == client }
                // A column without a version command is this project's own (or a user's command): its version
                // is the commit it was built from.
                let commit = recording.commit.split(separator: "+").first.map(String.init) ?? recording.commit
                var file = ResultsFile(
                    client: client, version: report.versions?[client] ?? commit,
                    description: definition?.description,
                    package: definition?.package.installCommand,
                    invocation: report.invocations[client].map { relative($0, recording) }, runs: [:])
                if let earlier = files[file.fileName] { file.runs = earlier.runs }
                let recorded = cells.map { cell($0, recording: recording) }
                file.runs[report.scheme] = ResultsFile.Run(
                    recorded: recording.date, commit: recording.commit, command: relative(report.command, recording),
                    reproductions: recorded.lazy.compactMap(\.reproductions).first,
                    cells: recorded.map(\.cell))
                files[file.fileName] = file
                changed.insert(file.fileName)
            }
        }
        return (
            changed.sorted().compactMap { files[$0] },
            rows.values.sorted { $0.name < $1.name }
        )
    }

    /// A report's cell as the results file keeps it, and where its reproduction runs (`REPRODUCTIONS` of
    /// `REPRODUCTIONS/SCENARIO/CLIENT`).
    static func cell(
        _ cell: MatrixReport.Cell, recording: Recording
    ) -> (cell: ResultsFile.Cell, reproductions: String?) {
        let grade: String =
            switch cell.result {
            case "pass": "pass"
            case "skipped": "skipped"
            case "n/a": "n/a"
            default: cell.grade ?? "fail"
            }
        var reproducer = cell.reproducer.map { relative($0, recording) }
        var run: String?
        var reproductions: String?
        if var compact = reproducer {
            // The directory and the run token as placeholders: what the column's cells share is then the same text.
            let directory = compact.directory
            let suffix = "/\(cell.scenario)/\(cell.client)"
            if directory.hasSuffix(suffix) {
                reproductions = String(directory.dropLast(suffix.count))
                compact.map { $0.replacingOccurrences(of: directory, with: ResultsFile.Cell.directoryMark) }
            }
            run = token(in: compact.compare.journal)
            if let run { compact.map { $0.replacingOccurrences(of: run, with: ResultsFile.Cell.runMark) } }
            if compact.compare.observed == cell.reason { compact.compare.observed = "" }
            reproducer = compact
        }
        let recorded = ResultsFile.Cell(
            scenario: cell.scenario, grade: grade, reason: cell.reason.isEmpty ? nil : relative(cell.reason, recording),
            reasons: cell.reasons.count > 1 ? cell.reasons : nil, notes: cell.notes.isEmpty ? nil : cell.notes,
            seconds: cell.seconds, run: run, reproducer: reproducer, trace: cell.trace.map(CompactTrace.init))
        return (recorded, reproductions)
    }

    /// The run token in a journal query, `...?run=TOKEN&settled=2s`.
    static func token(in journal: String) -> String? {
        guard let start = journal.range(of: "run=") else { return nil }
        let token = journal[start.upperBound...].prefix { $0 != "&" && $0 != "'" && $0 != " " }
        return token.isEmpty ? nil : String(token)
    }

    /// A reproducer with the repository's root taken out of every path, and without the harness's kept directory
    /// (a temporary path of the recording machine).
    static func relative(_ reproducer: Reproducer, _ recording: Recording) -> Reproducer {
        var copy = reproducer
        copy.map { relative($0, recording) }
        copy.kept = nil
        return copy
    }

    /// `text` with the products' directory written `.build/debug`, and `ROOT/` removed wherever it starts a path:
    /// `/work/repo/fixtures/scenarios` → `fixtures/scenarios`.
    static func relative(_ text: String, _ recording: Recording) -> String {
        var text = text
        if let products = recording.products, !products.isEmpty {
            let prefix = products.hasSuffix("/") ? products : products + "/"
            text = text.replacingOccurrences(of: prefix, with: ".build/debug/")
        }
        guard let root = recording.repositoryRoot, !root.isEmpty else { return text }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return text.replacingOccurrences(of: prefix, with: "")
    }
}
