import Foundation
import RangeServer

/// Renders the results table: `docs/results/index.html`, one self-contained page (no font, image, style sheet or
/// script from anywhere else), and `docs/results/README.md`, the same table in Markdown for GitHub.
///
/// Both are pure functions of the ``ResultsTable``: rendering the same files gives the same bytes. The page's rows
/// are scenarios with their RFC sections and the public reports of their failure, its columns the newest version of
/// each client; each cell is a grade linking to the run's detail (`#SCHEME/CLIENT/SCENARIO`), which the page's script
/// draws from the embedded data: the verdict, the reasons and notes, the picture of the run (the same drawing as
/// ``Timeline``, from its ``CompactTrace``), the requests and the reproducer. A cell whose grade differs from the
/// client's previous version is marked with what it was. A legend explains the grades; a filter shows only the rows
/// with a cell of one grade, or the changed ones.
package enum ResultsPage {
    /// The page.
    ///
    /// - Parameters:
    ///   - table: the results.
    /// - Returns: the HTML document.
    public static func html(_ table: ResultsTable) -> String {
        let columns = table.columns
        var text = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        text += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        text += "<title>rangecheck results: HTTP downloaders against servers that lie</title>\n"
        text += "<style>\n\(style)</style></head><body>\n"
        text += "<h1>HTTP downloaders against servers that lie</h1>\n"
        text += "<p class=\"intro\">Each row is a situation real servers create (a dropped connection, a file that "
        text += "changed between two requests, a 206 that lies about its length …), with the RFC sections its rule "
        text += "rests on and public reports of the failure in real clients. Each column is a downloader at the "
        text += "version named, run by <code>rangecheck</code> against <code>rangeserver</code> on loopback; each cell "
        text += "is graded from the server's journal and the file the client left. Click a cell for the picture of "
        text += "the run, its requests and the commands that reproduce it.</p>\n"
        text += controls(schemes: table.recordedSchemes)
        text += legend
        for (index, scheme) in table.recordedSchemes.enumerated() {
            text += schemeTable(table, columns: columns, scheme: scheme, hidden: index > 0)
        }
        text += "<section id=\"detail\" hidden></section>\n"
        text += columnsSection(columns)
        text += "<script type=\"application/json\" id=\"results-data\">" + embeddedData(table, columns: columns)
        text += "</script>\n<script>\n\(script)</script>\n</body></html>\n"
        return text
    }

    /// The scheme switch (a radio button per scheme shown, the first checked) and the grade filter.
    static func controls(schemes: [String]) -> String {
        "<form class=\"controls\" id=\"controls\">\n<fieldset><legend>Scheme</legend>\n"
            + schemes.enumerated().map { index, scheme in
                "<label><input type=\"radio\" name=\"scheme\" value=\"\(scheme)\"\(index == 0 ? " checked" : "")> "
                    + "\(scheme)</label>"
            }.joined(separator: "\n") + "</fieldset>\n" + filterControls
    }

    /// The grade filter.
    static let filterControls = """
        <fieldset><legend>Show</legend><select id="filter" aria-label="Show rows">
        <option value="">every row</option>
        <option value="corrupt">rows with a CORRUPT cell</option>
        <option value="fail">rows with a FAIL cell</option>
        <option value="unsafe">rows with an UNSAFE cell</option>
        <option value="costly">rows with a COSTLY cell</option>
        <option value="pass">rows with a pass cell</option>
        <option value="changed">rows with a cell changed since the client's previous version</option>
        </select></fieldset>
        <label><input type="checkbox" id="describe"> describe each row</label>
        <p id="shown" aria-live="polite"></p>
        </form>

        """

    /// What each grade means.
    static let legend = """
        <dl class="legend">
        <dt><span class="corrupt">CORRUPT</span></dt><dd>reported success, or left its output as if complete, with \
        bytes that are not the file: the user has a wrong file and does not know it</dd>
        <dt><span class="fail">FAIL</span></dt><dd>no correct output where one was expected, the wrong kind of \
        failure, a hang, or a broken MUST</dd>
        <dt><span class="unsafe">UNSAFE</span></dt><dd>right this time, but it did what corrupts the file in the \
        row its reason names (a resume without If-Range)</dd>
        <dt><span class="costly">COSTLY</span></dt><dd>right and safe, but over the row's bounds (bytes fetched \
        twice, requests, time, connections) or sooner than Retry-After allowed</dd>
        <dt><span class="pass">pass</span></dt><dd>every rule of the row held</dd>
        <dt><span class="na">n/a</span></dt><dd>the row needs a step the client cannot take (a pause, a CA file, \
        several files); never counted as a pass</dd>
        <dt><span class="changed-mark">◆</span></dt><dd>graded otherwise in the client's previous version (the \
        cell's tooltip says how)</dd>
        </dl>

        """

    /// The table of one scheme.
    static func schemeTable(
        _ table: ResultsTable, columns allColumns: [ResultsTable.Column], scheme: String, hidden: Bool
    ) -> String {
        let scenarios = table.gradedScenarios(scheme: scheme)
        let columns = shown(allColumns, scheme: scheme)
        var text = "<table class=\"results\" id=\"table-\(scheme)\" data-scheme=\"\(scheme)\""
        text += hidden ? " hidden>\n" : ">\n"
        text += "<caption>over \(scheme)" + escaped(notRun(allColumns, scheme: scheme).map { " (\($0))" } ?? "")
        text += "</caption>\n<thead><tr><th scope=\"col\">scenario (\(scheme))</th>"
        for column in columns {
            let own = column.isOwn ? " class=\"own\" title=\"this project's own client\"" : ""
            text +=
                "<th scope=\"col\"\(own)>\(escaped(column.client))<small>\(escaped(column.file.version))</small>"
            // Its counts by grade, worst first, and the recipe it runs, in its manual's words.
            let counts = ResultsTable.counts(column.file, scheme: scheme)
            let parts = (Grade.summaryOrder.map(\.rawValue) + ["pass", "n/a"]).compactMap { grade in
                counts[grade].map { "<span class=\"\(cssClass(grade))\" title=\"\(grade)\">\($0)</span>" }
            }
            text += "<small class=\"counts\">" + parts.joined(separator: " ") + "</small>"
            text += "<small class=\"recipe\"><a href=\"\(escaped(recipeLink(column)))\">recipe</a></small></th>"
        }
        text += "</tr></thead>\n<tbody>\n"
        for scenario in scenarios {
            let cells = columns.map { ($0, $0.cell(scheme: scheme, scenario: scenario)) }
            var grades = Set(cells.compactMap { $0.1?.grade })
            if cells.contains(where: { $0.0.change(scheme: scheme, scenario: scenario) != nil }) {
                grades.insert("changed")
            }
            text += "<tr data-grades=\"\(escaped(grades.sorted().joined(separator: " ")))\">"
            text += rowHeader(table.rows.row(scenario), name: scenario, scheme: scheme)
            for (column, cell) in cells {
                guard let cell else {
                    text += "<td class=\"none\">–</td>"
                    continue
                }
                // The reason is in the run's detail; the tooltip only says what a changed cell was.
                let change = column.change(scheme: scheme, scenario: scenario)
                text += "<td class=\"\(cssClass(cell.grade))\(change == nil ? "" : " changed")\""
                if let change {
                    text +=
                        " title=\"was \(escaped(change.label)) in \(escaped(column.client)) \(escaped(change.version))\""
                }
                text += ">"
                text += "<a href=\"#\(escaped(anchor(scheme: scheme, client: column.client, scenario: scenario)))\">"
                text += "\(escaped(cell.label))</a>"
                if change != nil { text += "<span class=\"changed-mark\" aria-label=\"changed\">◆</span>" }
                text += "</td>"
            }
            text += "</tr>\n"
        }
        text += "</tbody>\n"
        // Rows no column could take part in leave the table, and are listed under it with why.
        let notApplicable = table.notApplicableScenarios(scheme: scheme)
        if !notApplicable.isEmpty {
            text += "<tfoot><tr class=\"not-applicable\"><th scope=\"row\">n/a for every column</th>"
            text += "<td colspan=\"\(columns.count)\">"
            text +=
                notApplicable.map { row in
                    let why = row.reasons.isEmpty ? "" : ": " + row.reasons.map(escaped).joined(separator: "; ")
                    return
                        "<span id=\"\(escaped("row-\(scheme)-\(row.scenario)"))\">\(escaped(row.scenario))\(why)</span>"
                }.joined(separator: "<br>")
            text += "</td></tr></tfoot>\n"
        }
        text += "</table>\n"
        return text
    }

    /// Where a column's recipe is explained: docs/conformance.md's section quoting each downloader's manual, or the
    /// engine's documentation for this project's own.
    static func recipeLink(_ column: ResultsTable.Column) -> String {
        column.isOwn ? "../engine.md" : "../conformance.md#each-columns-recipe-in-its-manuals-words"
    }

    /// A row's header: its name (an anchor), its description, its RFC sections and reports, each linked.
    static func rowHeader(_ row: ResultsRows.Row?, name: String, scheme: String) -> String {
        var text = "<th scope=\"row\" id=\"\(escaped("row-\(scheme)-\(name)"))\""
        guard let row else { return text + ">\(escaped(name))</th>" }
        text += row.description.isEmpty ? ">" : " title=\"\(escaped(row.description))\">"
        text += escaped(name)
        if !row.description.isEmpty { text += "<small class=\"description\">\(escaped(row.description))</small>" }
        let links = (row.rfc.references + row.seenIn.references).map { reference in
            RowReferences.url(of: reference).map { "<a href=\"\(escaped($0))\">\(escaped(reference))</a>" }
                ?? escaped(reference)
        }
        if !links.isEmpty { text += "<small class=\"references\">" + links.joined(separator: " · ") + "</small>" }
        return text + "</th>"
    }

    /// Each column's version, package, invocation and when it was recorded.
    static func columnsSection(_ columns: [ResultsTable.Column]) -> String {
        var text = "<h2 id=\"columns\">The columns</h2>\n<dl class=\"columns\">\n"
        for column in columns {
            let file = column.file
            text += "<dt>\(escaped(file.client)) \(escaped(file.version))"
            if column.isOwn { text += " <small>(this project's own)</small>" }
            text += "</dt>\n<dd>"
            if let description = file.description { text += "\(escaped(description))<br>" }
            if let package = file.package { text += "installed with <code>\(escaped(package))</code><br>" }
            if let invocation = file.invocation { text += "run as <code>\(escaped(invocation))</code><br>" }
            for scheme in ResultsTable.schemes {
                guard let run = file.runs[scheme] else { continue }
                text += "\(scheme): recorded \(escaped(run.recorded)) at <code>\(escaped(run.commit))</code>, "
                text += "\(escaped(ResultsTable.summary(file, scheme: scheme)))<br>"
            }
            if let previous = column.previous {
                text += "previous version shown for changes: \(escaped(previous.version))"
            }
            text += "</dd>\n"
        }
        return text + "</dl>\n"
    }

    /// `http/curl/garbage-after`: a cell's fragment.
    static func anchor(scheme: String, client: String, scenario: String) -> String {
        "\(scheme)/\(Report.percentEncoded(client))/\(Report.percentEncoded(scenario))"
    }

    /// The CSS class of a grade: the grade, `na` or `skipped`.
    static func cssClass(_ grade: String) -> String { grade == "n/a" ? "na" : grade }

    static func escaped(_ text: String) -> String { TextEscaping.markup(text) }

    /// What the script reads: per client its version and, per scheme, where its reproductions run and per scenario
    /// the cell's facts (grade, reason, reasons, notes, seconds, the previous version's grade when it differs, the run
    /// token and the reproducer with its `{dir}` and `{run}` placeholders, which the script fills in, and the compact
    /// trace); and per row its references.
    ///
    /// Every string of eight characters or more that occurs more than once (a column's server line, its steps, a
    /// row's rules, a validator) is written once, in the table `strings`, and each use is `{"$": INDEX}`; every object
    /// key is its index in the table `keys`: the page then carries a column's shared text and the names of the
    /// facts once, not once per cell. The script puts them back as it parses.
    static func embeddedData(_ table: ResultsTable, columns: [ResultsTable.Column]) -> String {
        struct Cell: Encodable {
            var grade: String
            var reason: String?
            var reasons: [String]?
            var notes: [String]?
            var seconds: Double?
            var was: String?
            var run: String?
            var reproducer: Reproducer?
            var trace: CompactTrace?
        }
        struct Run: Encodable {
            var reproductions: String
            var cells: [String: Cell]
        }
        struct Client: Encodable {
            var version: String
            var runs: [String: Run]
        }
        struct Page: Encodable {
            var clients: [String: Client]
            var references: [String: [[String]]]
        }
        var clients: [String: Client] = [:]
        for column in columns {
            var runs: [String: Run] = [:]
            for (scheme, run) in column.file.runs {
                var cells: [String: Cell] = [:]
                for cell in run.cells {
                    let change = column.change(scheme: scheme, scenario: cell.scenario)
                    cells[cell.scenario] = Cell(
                        grade: cell.grade, reason: cell.reason,
                        reasons: cell.reasons?.map { "\($0.grade.rawValue): \($0.line)" }, notes: cell.notes,
                        seconds: cell.seconds, was: change.map { "\($0.label) in \(column.client) \($0.version)" },
                        run: cell.run, reproducer: cell.reproducer, trace: cell.trace)
                }
                runs[scheme] = Run(reproductions: run.reproductions ?? "/tmp/rangecheck-repro", cells: cells)
            }
            clients[column.client] = Client(version: column.file.version, runs: runs)
        }
        var references: [String: [[String]]] = [:]
        for row in table.rows.scenarios {
            references[row.name] = (row.rfc.references + row.seenIn.references).map {
                [$0, RowReferences.url(of: $0) ?? ""]
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let encoded = try? encoder.encode(Page(clients: clients, references: references)),
            let value = try? JSONValue(json: encoded)
        else { return "{\"strings\":[],\"keys\":[],\"data\":{}}" }
        let (strings, keys, interned) = StringTable.interned(Self.splittingCommands(value))
        // Slashes stay escaped (`<\/`): the data cannot end its own script element.
        let text =
            (try? encoder.encode([
                "strings": .array(strings.map(JSONValue.string)), "keys": .array(keys.map(JSONValue.string)),
                "data": interned,
            ]))
            .map { String(decoding: $0, as: UTF8.self) }
        return text ?? "{\"strings\":[],\"keys\":[],\"data\":{}}"
    }

    /// The data with every reproducer's client line as an array of its words (split at spaces; the script joins them
    /// with spaces again): a column's cells share most words of their client lines, and the string table then writes
    /// each once. (The server and setup lines are mostly shared whole, and stay whole.)
    static func splittingCommands(_ value: JSONValue) -> JSONValue {
        func words(_ line: JSONValue) -> JSONValue {
            guard case .string(let text) = line else { return line }
            return .array(text.split(separator: " ", omittingEmptySubsequences: false).map { .string(String($0)) })
        }
        switch value {
        case .object(var members):
            if case .object(var reproducer)? = members["reproducer"] {
                reproducer["client"] = reproducer["client"].map(words)
                members["reproducer"] = .object(reproducer)
                return .object(members)
            }
            return .object(members.mapValues(splittingCommands))
        case .array(let items): return .array(items.map(splittingCommands))
        default: return value
        }
    }

    /// The README: the tables in Markdown (a cell's grade, with what it was in the client's previous version when
    /// it changed), each column's counts, what each row rests on, and how the table is made.
    ///
    /// - Parameters:
    ///   - table: the results.
    /// - Returns: the Markdown.
    public static func markdown(_ table: ResultsTable) -> String {
        let columns = table.columns
        var text = "# Results: HTTP downloaders against servers that lie\n\n"
        text += "Written by `scripts/results` (`rangecheck results render`) from the results files beside it: do not "
        text += "edit. The same table, with the picture of every run, its requests and the commands that reproduce "
        text += "it, is [index.html](index.html) (open it in a browser; it is one file with nothing to fetch). How it "
        text += "is made and read: [docs/conformance.md](../conformance.md), \"The results table\".\n\n"
        text += "Grades, worst first: **CORRUPT** (reported success, or left its output as if complete, with wrong "
        text +=
            "bytes), **FAIL** (no correct output, the wrong failure, a hang, a broken MUST), **UNSAFE** (right this "
        text += "time, but did what corrupts the file in another row), **COSTLY** (right and safe, but over the row's "
        text += "bounds or sooner than Retry-After allowed), pass, n/a (a step the client cannot take). A cell marked "
        text += "\"(was X)\" was graded X in the client's previous version.\n\n"
        text +=
            "## The columns\n\nEach column's counts are worst first; its recipe is the flags it runs, each with its "
        text += "manual's words.\n\n| client | version | installed with | "
        let schemes = table.recordedSchemes
        text += schemes.joined(separator: " | ") + " | recipe |\n"
        text += "|---|---|---|" + schemes.map { _ in "---|" }.joined() + "---|\n"
        for column in columns {
            let file = column.file
            let runs = schemes.map { scheme in
                file.runs[scheme].map {
                    "\(ResultsTable.summary(file, scheme: scheme)) (\($0.recorded), `\($0.commit)`)"
                }
                    ?? "not run"
            }
            let name = column.isOwn ? "\(file.client) (ours)" : file.client
            text += "| \(name) | \(file.version) | " + (file.package.map { "`\($0)`" } ?? "") + " | "
            text += runs.map(Report.markdownEscaped).joined(separator: " | ") + " | [recipe](\(recipeLink(column))) |\n"
        }
        let allColumns = columns
        for scheme in ResultsTable.schemes {
            let scenarios = table.gradedScenarios(scheme: scheme)
            guard !scenarios.isEmpty else { continue }
            let columns = shown(allColumns, scheme: scheme)
            text += "\n## Over \(scheme)\n\n"
            if let notRun = notRun(allColumns, scheme: scheme) { text += Report.markdownEscaped(notRun) + ".\n\n" }
            text += "| scenario (\(scheme)) | "
            text += columns.map { "\($0.client) \($0.file.version)" }.joined(separator: " | ") + " |\n"
            text += "|---|" + columns.map { _ in "---|" }.joined() + "\n"
            for scenario in scenarios {
                let cells = columns.map { column -> String in
                    guard let cell = column.cell(scheme: scheme, scenario: scenario) else { return "–" }
                    var label = cell.graded.map { $0 == .pass ? "pass" : "**\($0.label)**" } ?? cell.label
                    if let change = column.change(scheme: scheme, scenario: scenario) {
                        label += " (was \(change.label))"
                    }
                    return label
                }
                text += "| [\(scenario)](#\(scenario)) | " + cells.joined(separator: " | ") + " |\n"
            }
            let notApplicable = table.notApplicableScenarios(scheme: scheme)
            if !notApplicable.isEmpty {
                text += "\nn/a for every column over \(scheme), so not in the table:\n\n"
                for row in notApplicable {
                    let why = row.reasons.isEmpty ? "" : ": " + row.reasons.joined(separator: "; ")
                    text += "- [\(row.scenario)](#\(row.scenario))" + Report.markdownEscaped(why) + "\n"
                }
            }
        }
        text += "\n## What each row rests on\n\n"
        let shown = Set(ResultsTable.schemes.flatMap { table.scenarios(scheme: $0) })
        for row in table.rows.scenarios where shown.contains(row.name) {
            text += "- <a id=\"\(row.name)\"></a>**\(row.name)**: \(Report.markdownEscaped(row.description))"
            let rfc = citations(row.rfc)
            let seen = citations(row.seenIn)
            text += " RFC: \(rfc). Seen in: \(seen).\n"
        }
        return text
    }

    /// The columns with a run over `scheme`: the ones its table shows.
    static func shown(_ columns: [ResultsTable.Column], scheme: String) -> [ResultsTable.Column] {
        columns.filter { $0.file.runs[scheme] != nil }
    }

    /// The columns with no run over `scheme` (a client that does not speak HTTP/2 has none over h2 and h2c), as
    /// one sentence; nil when every column has one.
    static func notRun(_ columns: [ResultsTable.Column], scheme: String) -> String? {
        let missing = columns.filter { $0.file.runs[scheme] == nil }.map(\.client)
        guard !missing.isEmpty else { return nil }
        return "not run over \(scheme), so not shown: " + missing.joined(separator: ", ")
    }

    /// Citations as Markdown links, or the reason there are none.
    static func citations(_ citations: ResultsRows.Citations) -> String {
        switch citations {
        case .cited(let list):
            list.map { reference in RowReferences.url(of: reference).map { "[\(reference)](\($0))" } ?? reference }
                .joined(separator: ", ")
        case .none(let reason): "none (\(Report.markdownEscaped(reason)))"
        }
    }
}
