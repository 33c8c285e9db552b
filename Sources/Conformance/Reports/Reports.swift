import Foundation
import RangeServer

/// Renders a matrix as text: a terminal table, Markdown, JUnit XML, JSON and a self-contained HTML page (in
/// `Report+HTML.swift`, with the detail view of each run).
///
/// Every renderer is a pure function of the matrix, so the output is deterministic and testable. Each shows the
/// matrix's scheme (`http` or `https`): in the first column's header, the HTML title, the JSON's `scheme`, and in
/// JUnit as a `-https` suffix of the suite and class names of an https run (an http run keeps the plain names).
/// Each states in its header the columns run and, for a run stopped early, that it was interrupted
/// (``Matrix/interruption``); each shows every cell's notes (``MatrixCell/notes``).
public enum Report {
    /// `columns: engine, curl`: the header line listing the columns run.
    static func columnsLine(_ matrix: Matrix) -> String {
        let named = matrix.clients.map { client in matrix.versions[client].map { "\(client) \($0)" } ?? client }
        return "columns: " + (named.isEmpty ? "none" : named.joined(separator: ", "))
    }

    /// `INTERRUPTED: interrupted by SIGTERM after 3 of 12 pairs; only the pairs that finished have a cell`, or nil.
    static func interruptionLine(_ matrix: Matrix) -> String? {
        matrix.interruption.map { "INTERRUPTED: \($0); only the pairs that finished have a cell" }
    }

    /// `baseline old.json: 1 worse, 2 new, 3 fixed`, or nil without a baseline.
    static func baselineLine(_ matrix: Matrix) -> String? {
        guard let path = matrix.baseline else { return nil }
        let changes = matrix.cells.compactMap(\.baseline)
        let counts = ["worse", "new", "fixed"].map { label in
            "\(changes.filter { $0.label == label }.count) \(label)"
        }
        return "baseline \(path): " + counts.joined(separator: ", ")
    }

    /// `worse than the baseline (was UNSAFE)`, `new: not in the baseline`, `fixed (was CORRUPT)`; nil for a cell graded
    /// as in the baseline, or without one.
    static func baselineNote(_ cell: MatrixCell) -> String? {
        switch cell.baseline {
        case .new: "new: not in the baseline"
        case .worse(let was): "worse than the baseline (was \(was.label))"
        case .fixed(let was): "fixed since the baseline (was \(was.label))"
        case .same, nil: nil
        }
    }

    /// The first column's header: `scenario (http)` or `scenario (https)`.
    static func rowHeader(_ matrix: Matrix) -> String { "scenario (\(matrix.scheme))" }

    /// `rangecheck`, or `rangecheck-https` for an https run: the JUnit names.
    static func junitPrefix(_ matrix: Matrix) -> String {
        matrix.scheme == "http" ? "rangecheck" : "rangecheck-\(matrix.scheme)"
    }

    /// A plain-text table: scenarios as rows, clients as columns; reasons for failures listed underneath,
    /// then one summary line per client.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    /// - Returns: the text, ending with a newline.
    public static func terminal(_ matrix: Matrix) -> String {
        var text = columnsLine(matrix) + "\n"
        if let interrupted = interruptionLine(matrix) { text += interrupted + "\n" }
        if let baseline = baselineLine(matrix) { text += baseline + "\n" }
        text += "\n"
        let header = [rowHeader(matrix)] + matrix.clients
        var rows: [[String]] = []
        for scenario in matrix.scenarios {
            let cells = matrix.clients.map { matrix.cell(scenario: scenario, client: $0)?.label ?? "-" }
            if cells.allSatisfy({ $0 == "-" }) { continue }
            rows.append([scenario] + cells)
        }
        var widths = header.map(\.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ").trimmingTrailingSpaces() + "\n"
        }
        text += line(header)
        text += line(widths.map { String(repeating: "-", count: $0) })
        for row in rows { text += line(row) }
        let explained = orderedCells(matrix).filter {
            ($0.result != .pass && !$0.result.reason.isEmpty) || !$0.notes.isEmpty || baselineNote($0) != nil
        }
        if !explained.isEmpty {
            text += "\n"
            for cell in explained {
                if cell.result != .pass && !cell.result.reason.isEmpty {
                    text += "\(cell.label) \(cell.scenario) × \(cell.client): \(cell.result.reason)\n"
                }
                // Each reason with its grade, when there is more than the headline.
                if cell.reasons.count > 1 {
                    for reason in cell.reasons {
                        text += "  \(reason.grade.rawValue): \(reason.line)\n"
                    }
                }
                for note in cell.notes { text += "note \(cell.scenario) × \(cell.client): \(note)\n" }
                if let change = cell.baseline, let note = baselineNote(cell) {
                    text += "\(change.label) \(cell.scenario) × \(cell.client): \(cell.label), \(note)\n"
                }
            }
        }
        text += "\n"
        for summary in matrix.summaries { text += summary.line + "\n" }
        return text
    }

    /// A Markdown table with the reason in each non-passing cell, a footnote on each row naming what it rests on
    /// (its RFC sections and the reports of its failure in real clients), the summaries, and the invocations.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    /// - Returns: the Markdown.
    public static func markdown(_ matrix: Matrix) -> String {
        var text = ""
        if let interrupted = interruptionLine(matrix) { text += "**\(markdownEscaped(interrupted))**\n\n" }
        if let baseline = baselineLine(matrix) { text += markdownEscaped(baseline) + "\n\n" }
        text += markdownEscaped(
            "Columns run: " + columnsLine(matrix).dropFirst("columns: ".count))
        text += "\n\n"
        text += "| \(rowHeader(matrix)) | " + matrix.clients.joined(separator: " | ") + " |\n"
        text += "|---|" + matrix.clients.map { _ in "---|" }.joined() + "\n"
        var shownRows: [String] = []
        for scenario in matrix.scenarios {
            let cells = matrix.clients.map { client -> String in
                guard let cell = matrix.cell(scenario: scenario, client: client) else { return "–" }
                let result = cell.result
                let verdict =
                    result == .pass ? "pass" : "**\(cell.label)**: " + markdownEscaped(result.reason)
                let change = baselineNote(cell).map { "<br>**" + markdownEscaped($0) + "**" } ?? ""
                return verdict + cell.notes.map { "<br>note: " + markdownEscaped($0) }.joined() + change
            }
            if cells.allSatisfy({ $0 == "–" }) { continue }
            shownRows.append(scenario)
            text += "| \(scenario)\(markdownReferenceMark(matrix, scenario: scenario)) | "
            text += cells.joined(separator: " | ") + " |\n"
        }
        text += markdownReferenceFootnotes(matrix, rows: shownRows)
        text += "\n" + gradeLegend + "\n\n"
        for summary in matrix.summaries { text += "- " + summary.line + "\n" }
        if !matrix.invocations.isEmpty {
            text += "\n"
            for client in matrix.clients {
                if let invocation = matrix.invocations[client] { text += "- `\(client)`: `\(invocation)`\n" }
            }
        }
        text += reproducersMarkdown(matrix)
        return text
    }

    /// JUnit XML: one test suite per client, one test case per pair that was run.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    /// - Returns: the XML document.
    public static func junit(_ matrix: Matrix) -> String {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let summaries = matrix.summaries
        let total = summaries.reduce(0) { $0 + $1.passed + $1.failed + $1.skipped + $1.notApplicable }
        let failures = summaries.reduce(0) { $0 + $1.failed }
        let prefix = junitPrefix(matrix)
        let suffix = matrix.scheme == "http" ? "" : "-\(matrix.scheme)"
        text += "<!-- \(xmlEscaped(columnsLine(matrix)))"
        if let interruption = matrix.interruption { text += "; \(xmlEscaped(interruption))" }
        text += " -->\n"
        text += "<testsuites name=\"\(prefix)\" tests=\"\(total)\" failures=\"\(failures)\">\n"
        for summary in summaries {
            let cells = orderedCells(matrix).filter { $0.client == summary.client }
            let tests = cells.count
            let skipped = summary.skipped + summary.notApplicable
            text += "  <testsuite name=\"\(xmlEscaped(summary.client + suffix))\" tests=\"\(tests)\""
            text += " failures=\"\(summary.failed)\" skipped=\"\(skipped)\">\n"
            if let interruption = matrix.interruption {
                text +=
                    "    <properties><property name=\"interrupted\" value=\"\(xmlEscaped(interruption))\"/></properties>\n"
            }
            for cell in cells {
                let time = cell.elapsed.map { Judge.seconds($0).dropLast() } ?? "0"
                text += "    <testcase classname=\"\(prefix).\(xmlEscaped(cell.client))\""
                text += " name=\"\(xmlEscaped(cell.scenario))\" time=\"\(time)\""
                let lines = cell.notes + (baselineNote(cell).map { ["baseline: " + $0] } ?? [])
                let notes =
                    lines.isEmpty
                    ? "" : "      <system-out>\(xmlEscaped(lines.joined(separator: "\n")))</system-out>\n"
                switch cell.result {
                case .pass:
                    text += notes.isEmpty ? "/>\n" : ">\n\(notes)    </testcase>\n"
                case .fail(let reason):
                    let grade = cell.grade ?? .fail
                    text +=
                        ">\n      <failure type=\"\(grade.rawValue)\" message=\"\(xmlEscaped(grade.label + ": " + reason))\">"
                    text += xmlEscaped(cell.reasons.map { "\($0.grade.rawValue): \($0.line)" }.joined(separator: "\n"))
                    text += "</failure>\n\(notes)    </testcase>\n"
                case .skipped(let reason), .notApplicable(let reason):
                    let message = "\(cell.result.label): \(reason)"
                    text += ">\n      <skipped message=\"\(xmlEscaped(message))\"/>\n\(notes)    </testcase>\n"
                }
            }
            text += "  </testsuite>\n"
        }
        text += "</testsuites>\n"
        return text
    }

    /// JSON: `{"command", "scheme", "clients", "scenarios", "descriptions", "invocations", "cells": [{scenario, client,
    /// result, grade, reason, reasons, notes, seconds}], "summaries": [{client, passed, failed, skipped, notApplicable,
    /// graded}]}`, and `"interruption"` for a run stopped early; `descriptions` maps each scenario to what it
    /// exercises, `clients` are the columns run. `result` stays `pass`, `FAIL`, `skipped` or `n/a`; `grade` is `pass`,
    /// `corrupt`, `fail`, `unsafe` or `costly` (absent for skipped and n/a) and `reasons` lists every violation with
    /// its grade (and, for an `unsafe` one, the `sibling` row where it corrupts). A run compared with a `--baseline` has
    /// `"baseline"` (the file) and, in each cell, `"baseline": {"change": "new"|"worse"|"fixed"|"same", "was"}`. A
    /// failed cell the harness ran has `"reproducer": {server, setup, client, note, steps, compare: {expected, sha256,
    /// outputs, rules, journal, observed}, directory, kept}` (``Reproducer``).
    /// `references` maps each scenario to what it rests on, `{"rfc", "seen-in"}`, each a list or `{"none": "why"}`.
    /// With `traces`, each cell that ran also has `"trace"`, its ``RunTrace`` (what the picture is drawn from, and
    /// what `rangecheck results record` keeps).
    ///
    /// - Parameters:
    ///   - matrix: the results.
    ///   - traces: whether to include each run's trace.
    /// - Returns: the JSON document, pretty-printed with sorted keys, ending with a newline.
    public static func json(_ matrix: Matrix, traces: Bool = false) -> String {
        let document = JSONDocument(
            command: matrix.command, scheme: matrix.scheme, clients: matrix.clients, scenarios: matrix.scenarios,
            descriptions: matrix.descriptions.filter { matrix.scenarios.contains($0.key) },
            references: matrix.references.filter { matrix.scenarios.contains($0.key) },
            invocations: matrix.invocations.filter { matrix.clients.contains($0.key) },
            versions: matrix.versions.filter { matrix.clients.contains($0.key) },
            cells: orderedCells(matrix).map { cell in
                JSONDocument.Cell(
                    scenario: cell.scenario, client: cell.client, result: cell.result.label,
                    grade: cell.grade?.rawValue, reason: cell.result.reason, reasons: cell.reasons, notes: cell.notes,
                    baseline: cell.baseline.map { JSONDocument.Change(change: $0.label, was: $0.was?.rawValue) },
                    seconds: cell.elapsed.flatMap { Double(Judge.seconds($0).dropLast()) }, reproducer: cell.reproducer,
                    trace: traces ? cell.trace : nil)
            },
            summaries: matrix.summaries.map { summary in
                JSONDocument.Summary(
                    client: summary.client, passed: summary.passed, failed: summary.failed, skipped: summary.skipped,
                    notApplicable: summary.notApplicable,
                    graded: Dictionary(
                        uniqueKeysWithValues: Grade.worstFirst.map { ($0.rawValue, summary.graded[$0] ?? 0) }))
            }, interruption: matrix.interruption, baseline: matrix.baseline)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Strings, integers and finite numbers only: encoding cannot fail.
        let data = (try? encoder.encode(document)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// The shape of ``json(_:)``.
    private struct JSONDocument: Encodable {
        struct Cell: Encodable {
            var scenario: String
            var client: String
            var result: String
            var grade: String?
            var reason: String
            var reasons: [Violation]
            var notes: [String]
            var baseline: Change?
            var seconds: Double?
            var reproducer: Reproducer?
            var trace: RunTrace?
        }

        struct Change: Encodable {
            var change: String
            var was: String?
        }

        struct Summary: Encodable {
            var client: String
            var passed: Int
            var failed: Int
            var skipped: Int
            var notApplicable: Int
            var graded: [String: Int]
        }

        var command: String
        var scheme: String
        var clients: [String]
        var scenarios: [String]
        var descriptions: [String: String]
        var references: [String: RowReferences]
        var invocations: [String: String]
        var versions: [String: String]
        var cells: [Cell]
        var summaries: [Summary]
        var interruption: String?
        var baseline: String?
    }

    /// What each grade means, one line: under the Markdown table, in the HTML page.
    static let gradeLegend =
        "Grades, worst first: CORRUPT (reported success, or left its output as if complete, with wrong bytes), "
        + "FAIL (no correct output where one was expected, the wrong failure, a hang, a broken MUST), "
        + "UNSAFE (right this time, but did what corrupts the file in the row named), "
        + "COSTLY (right and safe, but over the row's bounds or sooner than Retry-After allowed)."

    /// Cells in row order, then column order.
    static func orderedCells(_ matrix: Matrix) -> [MatrixCell] {
        matrix.scenarios.flatMap { scenario in
            matrix.clients.compactMap { matrix.cell(scenario: scenario, client: $0) }
        }
    }

    static func htmlEscaped(_ text: String) -> String { TextEscaping.markup(text) }

    static func xmlEscaped(_ text: String) -> String { TextEscaping.markup(text) }

    static func markdownEscaped(_ text: String) -> String {
        text.replacingAll("|", with: "\\|").replacingAll("\n", with: " ")
    }

}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }

    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { if character == target { result += replacement } else { result.append(character) } }
        return result
    }
}
