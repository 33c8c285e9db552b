import ArgumentParser
import Conformance
import Foundation

/// `rangecheck results`: the public results table in `docs/results/` (`scripts/results` drives it).
struct Results: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results",
        abstract: "Record runs into the results table, render its page and README, and write bug reports.",
        discussion: """
            The results table is a directory (docs/results): one CLIENT@VERSION.json per client and version, \
            scenarios.json with the rows, and index.html and README.md rendered from them. scripts/results runs \
            the clients, then `record` and `render`.
            """,
        subcommands: [Record.self, Render.self, BugReportCommand.self]
    )

    /// `rangecheck results record`: reports into results files.
    struct Record: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record `rangecheck --json --json-traces` reports as results files, one per client and version.")

        @Option(name: .customLong("into"), help: "The results directory.")
        var directory = "docs/results"

        @Option(name: .customLong("commit"), help: "The commit the harness was built from.")
        var commit: String

        @Option(name: .customLong("date"), help: "The day recorded, YYYY-MM-DD (default: today, UTC).")
        var date: String?

        @Option(
            name: .customLong("repository-root"),
            help:
                "The repository's root: paths under it are recorded relative to a checkout (default: the current directory)."
        )
        var repositoryRoot: String?

        @Option(
            name: .customLong("products"),
            help: "Where the run's rangecheck, rangeserver and rangefetch were: recorded as .build/debug.")
        var products: String?

        @OptionGroup var catalogueOptions: CatalogueOptions

        @Argument(help: "The reports.")
        var reports: [String]

        func validate() throws {
            guard !reports.isEmpty else { throw ValidationError("name at least one report") }
            if let date, date.count != 10 || date.split(separator: "-").count != 3 {
                throw ValidationError("--date: '\(date)' is not YYYY-MM-DD")
            }
        }

        func run() throws {
            var parsed: [ResultsRecorder.MatrixReport] = []
            for path in reports {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("\(path): cannot read the report")
                }
                do { parsed.append(try ResultsRecorder.MatrixReport.decode(data, path: path)) } catch {
                    throw ValidationError(error.message)
                }
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let table: ResultsTable
            do { table = try ResultsTable.load(directory: directory) } catch { throw ValidationError(error.message) }
            let scenarios = catalogueOptions.scenariosDirectory
            var scenarioFiles: [String: String] = [:]
            for name in Set(parsed.flatMap(\.scenarios)) {
                if let data = FileManager.default.contents(atPath: "\(scenarios)/\(name).json") {
                    scenarioFiles[name] = String(decoding: data, as: UTF8.self)
                }
            }
            let definitions =
                (try? ClientCatalogue.loadDefinitions(
                    [ClientCatalogue.definitionsDirectory(besideScenarios: scenarios)], optional: [])) ?? []
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd"
            let recording = ResultsRecorder.Recording(
                commit: commit, date: date ?? formatter.string(from: Date()),
                repositoryRoot: repositoryRoot ?? FileManager.default.currentDirectoryPath, products: products,
                definitions: definitions,
                scenarioFiles: scenarioFiles)
            let recorded: (files: [ResultsFile], rows: [ResultsRows.Row])
            do {
                recorded = try ResultsRecorder.record(reports: parsed, existing: table.files, recording: recording)
            } catch {
                throw ValidationError(error.message)
            }
            for file in recorded.files {
                try Data(file.encoded().utf8).write(to: URL(fileURLWithPath: "\(directory)/\(file.fileName)"))
                print("recorded \(directory)/\(file.fileName): " + file.runs.keys.sorted().joined(separator: ", "))
            }
            let rows = table.rows.merged(with: recorded.rows)
            try Data(rows.encoded().utf8).write(
                to: URL(fileURLWithPath: "\(directory)/\(ResultsTable.rowsFileName)"))
        }
    }

    /// `rangecheck results render`: the page and the README.
    struct Render: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "render",
            abstract: "Render index.html and README.md of a results directory from its files.")

        @Argument(help: "The results directory.")
        var directory = "docs/results"

        func run() throws {
            let table: ResultsTable
            do { table = try ResultsTable.load(directory: directory) } catch { throw ValidationError(error.message) }
            guard !table.files.isEmpty else {
                throw ValidationError("\(directory): no results file (CLIENT@VERSION.json)")
            }
            try Data(ResultsPage.html(table).utf8).write(to: URL(fileURLWithPath: "\(directory)/index.html"))
            try Data(ResultsPage.markdown(table).utf8).write(to: URL(fileURLWithPath: "\(directory)/README.md"))
            print("rendered \(directory)/index.html and \(directory)/README.md from \(table.files.count) results files")
        }
    }

    /// `rangecheck results report`: a failed cell's bug report.
    struct BugReportCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "Print the bug report of a failed cell, for the client's maintainers (Markdown).")

        @Option(name: .customLong("client"), help: "The client (column).")
        var client: String

        @Option(name: .customLong("scenario"), help: "The scenario (row).")
        var scenario: String

        @Option(name: .customLong("scheme"), help: "http or https (default: http when that run has the row).")
        var scheme: String?

        @Option(name: .customLong("repository"), help: "Where the repository can be cloned from, for the build steps.")
        var repository: String?

        @Argument(help: "The results directory.")
        var directory = "docs/results"

        func validate() throws {
            if let scheme, !ResultsTable.schemes.contains(scheme) {
                throw ValidationError("--scheme: '\(scheme)' is not http or https")
            }
        }

        func run() throws {
            do {
                let table = try ResultsTable.load(directory: directory)
                print(
                    try BugReport.markdown(
                        table: table, client: client, scenario: scenario, scheme: scheme, repository: repository),
                    terminator: "")
            } catch {
                throw ValidationError(error.message)
            }
        }
    }
}
