import Foundation

/// Everything in `docs/results/`: every results file and the rows, read once; what the page, the README and the bug
/// reports are rendered from.
///
/// The table shows the newest version of each client (by its version's numbers), and for each of its cells the grade
/// the previous version of that client had, when it differs.
package struct ResultsTable: Hashable, Sendable {
    /// Every results file, any version.
    public var files: [ResultsFile]
    /// The rows' descriptions, references and scenario files.
    public var rows: ResultsRows

    /// The name of the rows' file in the results directory.
    public static let rowsFileName = "scenarios.json"

    /// The schemes, in the order they are shown: the matrix's (``MatrixScheme``), HTTP/1.1 first.
    public static let schemes = MatrixScheme.allCases.map(\.rawValue)

    /// The schemes at least one file has a run of, in ``schemes`` order: the ones the page and the README show.
    public var recordedSchemes: [String] {
        Self.schemes.filter { scheme in files.contains { $0.runs[scheme] != nil } }
    }

    /// One column: the newest file of a client and the one before it, if any.
    public struct Column: Hashable, Sendable {
        /// The newest version's file.
        public var file: ResultsFile
        /// The previous version's file.
        public var previous: ResultsFile?

        /// The client's name.
        public var client: String { file.client }

        /// Whether the column is one of this project's own (the engine, rangefetch, URLSession), not an external
        /// downloader.
        public var isOwn: Bool { ClientCatalogue.swiftNames.contains(file.client) }

        /// A cell of the newest version.
        public func cell(scheme: String, scenario: String) -> ResultsFile.Cell? {
            file.runs[scheme]?.cells.first { $0.scenario == scenario }
        }

        /// The previous version's label of a cell, when the previous version ran it and its label differs.
        public func change(scheme: String, scenario: String) -> (version: String, label: String)? {
            guard let previous, let now = cell(scheme: scheme, scenario: scenario),
                let was = previous.runs[scheme]?.cells.first(where: { $0.scenario == scenario }),
                was.grade != now.grade
            else { return nil }
            return (previous.version, was.label)
        }
    }

    /// Makes the table.
    ///
    /// - Parameters:
    ///   - files: the results files.
    ///   - rows: the rows.
    public init(files: [ResultsFile], rows: ResultsRows) {
        self.files = files.sorted { ($0.client, $0.version) < ($1.client, $1.version) }
        self.rows = rows
    }

    /// Reads a results directory: every `*@*.json` and `scenarios.json`.
    ///
    /// - Parameters:
    ///   - directory: the directory.
    /// - Returns: the table.
    /// - Throws: `ConformanceError.invalidArgument` naming a file that cannot be read.
    public static func load(directory: String) throws(ConformanceError) -> ResultsTable {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw .invalidArgument("\(directory): cannot read the results directory")
        }
        var files: [ResultsFile] = []
        for name in names.sorted() where name.hasSuffix(".json") && name.contains("@") {
            let path = "\(directory)/\(name)"
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .invalidArgument("\(path): cannot read the file")
            }
            files.append(try ResultsFile.decode(data, path: path))
        }
        var rows = ResultsRows(scenarios: [])
        let rowsPath = "\(directory)/\(rowsFileName)"
        if let data = FileManager.default.contents(atPath: rowsPath) {
            do { rows = try JSONDecoder().decode(ResultsRows.self, from: data) } catch {
                throw .invalidArgument("\(rowsPath): not a rows file (\(ResultsFile.describe(error)))")
            }
        }
        return ResultsTable(files: files, rows: rows)
    }

    /// The columns: the newest version of each client, the external downloaders first (in the harness's column order,
    /// then by name), this project's own columns last.
    public var columns: [Column] {
        let byClient = Dictionary(grouping: files, by: \.client)
        let columns = byClient.values.map { versions -> Column in
            let sorted = versions.sorted(by: Self.precedes)
            return Column(file: sorted[sorted.count - 1], previous: sorted.count > 1 ? sorted[sorted.count - 2] : nil)
        }
        func rank(_ column: Column) -> (Int, Int, String) {
            if let own = ClientCatalogue.swiftNames.firstIndex(of: column.client) { return (1, own, column.client) }
            let order = ClientCatalogue.definitionOrder.firstIndex(of: column.client) ?? Int.max
            return (0, order, column.client)
        }
        return columns.sorted { rank($0) < rank($1) }
    }

    /// The scenarios any newest column ran over `scheme`, in name order.
    public func scenarios(scheme: String) -> [String] {
        Set(columns.flatMap { $0.file.runs[scheme]?.cells.map(\.scenario) ?? [] }).sorted()
    }

    /// The rows of a scheme's table: its scenarios that at least one column graded (a cell that is not n/a).
    public func gradedScenarios(scheme: String) -> [String] {
        let columns = self.columns
        return scenarios(scheme: scheme).filter { scenario in
            columns.contains { $0.cell(scheme: scheme, scenario: scenario).map { $0.grade != "n/a" } ?? false }
        }
    }

    /// The scenarios of a scheme that every column recorded as n/a (or did not run), each with the distinct reasons
    /// its cells give, in column order: listed under the scheme's table, which they would fill with rows that say
    /// nothing of any client.
    ///
    /// A reason that starts with its column's name (`curl cannot cancel`) is said once for all the columns that give
    /// it, with their names or `every column` (`cannot cancel (every column)`); any other reason is given as it is.
    public func notApplicableScenarios(scheme: String) -> [(scenario: String, reasons: [String])] {
        let columns = self.columns
        let graded = Set(gradedScenarios(scheme: scheme))
        return scenarios(scheme: scheme).filter { !graded.contains($0) }.map { scenario in
            var order: [String] = []
            var clients: [String: [String]] = [:]
            var present = 0
            for column in columns {
                guard let cell = column.cell(scheme: scheme, scenario: scenario) else { continue }
                present += 1
                guard let reason = cell.reason else { continue }
                let named = reason.hasPrefix(column.client + " ")
                let key = named ? "\u{1}" + reason.dropFirst(column.client.count + 1) : reason
                if clients[key] == nil { order.append(key) }
                if named { clients[key, default: []].append(column.client) } else { clients[key] = clients[key] ?? [] }
            }
            let reasons = order.map { key -> String in
                guard key.hasPrefix("\u{1}") else { return key }
                let names = clients[key] ?? []
                return "\(key.dropFirst()) (\(names.count == present ? "every column" : names.joined(separator: ", ")))"
            }
            return (scenario, reasons)
        }
    }

    /// Whether file `a` holds an older version than `b`: by the numbers of their versions when both are dotted
    /// (`7.9` before `7.10`); else (a commit, this project's own columns) by the last day either was recorded, then
    /// as text.
    public static func precedes(_ a: ResultsFile, _ b: ResultsFile) -> Bool {
        if a.version.contains("."), b.version.contains(".") { return versionPrecedes(a.version, b.version) }
        let (first, second) = (a.runs.values.map(\.recorded).max() ?? "", b.runs.values.map(\.recorded).max() ?? "")
        return first != second ? first < second : a.version < b.version
    }

    /// Whether version `a` comes before `b`: by their numbers (`7.9` before `7.10`), then as text.
    public static func versionPrecedes(_ a: String, _ b: String) -> Bool {
        func numbers(_ text: String) -> [Int] {
            text.split { !$0.isNumber }.compactMap { Int($0) }
        }
        let (left, right) = (numbers(a), numbers(b))
        for (x, y) in zip(left, right) where x != y { return x < y }
        if left.count != right.count { return left.count < right.count }
        return a < b
    }

    /// How many cells of a column have each label over a scheme: `pass`, each grade, `n/a`, `skipped`.
    public static func counts(_ file: ResultsFile, scheme: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        for cell in file.runs[scheme]?.cells ?? [] { counts[cell.grade, default: 0] += 1 }
        return counts
    }

    /// `9 corrupt, 11 unsafe, 6 fail, 1 costly, 28 pass, 3 n/a`: a column's counts over a scheme, worst first.
    public static func summary(_ file: ResultsFile, scheme: String) -> String {
        let counts = counts(file, scheme: scheme)
        var parts = Grade.summaryOrder.map { "\(counts[$0.rawValue] ?? 0) \($0.rawValue)" }
        parts.append("\(counts["pass"] ?? 0) pass")
        if let skipped = counts["skipped"], skipped > 0 { parts.append("\(skipped) skipped") }
        parts.append("\(counts["n/a"] ?? 0) n/a")
        return parts.joined(separator: ", ")
    }
}
