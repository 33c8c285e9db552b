import Foundation

/// A bug report for a client's maintainers, from one failed cell of the results table (`scripts/results --report
/// CLIENT SCENARIO`): Markdown to paste into their issue tracker, needing nothing but a clone of this repository.
///
/// It says which versions, how to build and start the server (`rangeserver` from the recorded commit, with the
/// scenario's catalogue file quoted whole), the exact client command (the cell's ``Reproducer``, the same commands
/// the reports show), what the client did (its requests, from the server's journal), what it should have done and
/// the RFC sections that say so, and what the output holds (its content map).
package enum BugReport {
    /// The report of a cell.
    ///
    /// - Parameters:
    ///   - table: the results.
    ///   - client: the column.
    ///   - scenario: the row.
    ///   - scheme: `http` or `https`; nil for http when that run has the row, else https.
    ///   - repository: where the repository can be cloned from, for the build steps; nil when it has no public
    ///     address yet (the steps then start in a checkout).
    /// - Returns: the report's Markdown.
    /// - Throws: `ConformanceError.notFound` for a client or cell the table lacks, `.invalidArgument` for a cell
    ///   that passed or did not run (there is nothing to report).
    public static func markdown(
        table: ResultsTable, client: String, scenario: String, scheme: String? = nil,
        repository: String? = nil
    ) throws(ConformanceError) -> String {
        guard let column = table.columns.first(where: { $0.client == client }) else {
            let known = table.columns.map(\.client).joined(separator: ", ")
            throw .notFound("no results for client '\(client)' (known: \(known))")
        }
        let file = column.file
        let schemes = scheme.map { [$0] } ?? ResultsTable.schemes
        guard
            let (chosen, run, cell) = schemes.lazy.compactMap({ name -> (String, ResultsFile.Run, ResultsFile.Cell)? in
                guard let run = file.runs[name], let cell = run.cells.first(where: { $0.scenario == scenario }) else {
                    return nil
                }
                return (name, run, cell)
            }).first
        else {
            throw .notFound(
                "\(client) \(file.version) has no cell '\(scenario)'\(scheme.map { " over \($0)" } ?? "")")
        }
        guard let grade = cell.graded, grade != .pass else {
            throw .invalidArgument(
                "\(scenario) × \(client) over \(chosen) is \(cell.label): there is nothing to report")
        }
        let row = table.rows.row(scenario)
        let reproducer = cell.reproducer(in: run, client: client)
        let trace = cell.trace?.runTrace(scenario: scenario, description: row?.description ?? "")
        var text = "## \(client) \(file.version): \(cell.reason ?? grade.label) (\(scenario), \(chosen))\n\n"
        if grade == .corrupt {
            text += "\(client) reported success, or left its output in place as if complete, with bytes that are "
            text += "not the file the server serves.\n\n"
        }
        if let description = row?.description, !description.isEmpty {
            text += "**The situation** (`\(scenario)`): \(description)\n\n"
        }
        text += "### Versions\n\n"
        text += "- \(client) \(file.version)" + (file.package.map { " (`\($0)`)" } ?? "") + "\n"
        text += "- the test server: `rangeserver` of rangecheck" + (repository.map { " (\($0))" } ?? "")
        text += " at commit `\(run.commit)`, "
        text += "recorded \(run.recorded)\n"
        if let invocation = file.invocation { text += "- the harness invokes it as `\(invocation)`\n" }
        text += "\n### Steps to reproduce\n\n"
        text += "Build the server from this repository's commit (Swift 6, libmicrohttpd):\n\n```sh\n"
        let commit = run.commit.split(separator: "+").first.map(String.init) ?? run.commit
        if let repository {
            text += "git clone \(repository) rangecheck && cd rangecheck && git checkout \(commit)\n"
        } else {
            text += "git checkout \(commit)   # in a clone of rangecheck\n"
        }
        text += "swift build --product rangeserver\n```\n\n"
        if let file = row?.file {
            text += "The scenario, `fixtures/scenarios/\(scenario).json` (the server loads every file of "
            text += "`fixtures/scenarios`; this is the one the URL names):\n\n```json\n\(file)"
            text += file.hasSuffix("\n") ? "```\n\n" : "\n```\n\n"
        }
        if let reproducer {
            text += "Then, from the checkout (the server in a terminal of its own):\n\n```sh\n"
            text += Report.reproducerScript(reproducer) + "```\n\n"
        } else {
            text += "(This cell has no reproducer: the run was not started by the harness.)\n\n"
        }
        text += "### What \(client) did\n\n"
        if let trace {
            text += requests(trace, omitted: cell.trace?.omitted)
        } else {
            text += "(No trace was recorded.)\n\n"
        }
        text += "The harness's verdict, **\(grade.label)**: \(cell.reason ?? "")\n"
        for violation in cell.reasons ?? [] { text += "- \(violation.grade.rawValue): \(violation.line)\n" }
        for note in cell.notes ?? [] { text += "- note: \(note)\n" }
        text += "\n### What it should have done\n\n"
        if let reproducer {
            text += "- \(capitalized(reproducer.compare.expected))"
            text += reproducer.compare.sha256.map { " (SHA-256 `\($0)`)" } ?? ""
            text += "\n"
            for rule in reproducer.compare.rules { text += "- \(capitalized(rule))\n" }
        }
        if let row {
            text += references("The rule rests on", row.rfc)
            text += references("Reports of the same failure elsewhere", row.seenIn)
        }
        text += "\n### The output\n\n"
        if let trace {
            text += outputs(trace)
        } else {
            text += "(No trace was recorded.)\n"
        }
        return text
    }

    /// The requests as a Markdown table, in the order the server received them, with a row standing for those a long
    /// run's trace left out.
    ///
    /// - Parameters:
    ///   - trace: the run.
    ///   - omitted: the requests its compact form left out, if any.
    /// - Returns: the Markdown.
    public static func requests(_ trace: RunTrace, omitted: CompactTrace.Omission? = nil) -> String {
        guard !trace.requests.isEmpty else { return "No request reached the server.\n\n" }
        var text = "Its requests, as the server's journal recorded them (times from the first request's arrival):\n\n"
        text += "| # | request | Range | If-Range | status | sent | ended | time |\n|---|---|---|---|---|---|---|---|\n"
        for (index, request) in trace.requests.enumerated() {
            if let omitted, index == omitted.after {
                let statuses = omitted.statuses.keys.sorted().map { "\($0) × \(omitted.statuses[$0]!)" }
                text += "| … | \(omitted.count) more requests, left out of the record: statuses "
                text += statuses.joined(separator: ", ") + " | | | | | | |\n"
            }
            let place = request.route.map { $0.isEmpty ? "main URL" : $0 } ?? request.target
            let sent =
                request.sent.map { "bytes \($0) (\(request.bodyBytesSent))" }
                ?? (request.bodyBytesSent > 0 ? "\(request.bodyBytesSent) body bytes" : "no body")
            var ended = request.outcome.rawValue
            if !request.faults.isEmpty { ended += " (" + request.faults.joined(separator: ", ") + ")" }
            if let location = request.location { ended += ", Location: \(location)" }
            let cells = [
                "\(request.order)", "\(request.method) \(place)", request.rangeHeader ?? "–", request.ifRange ?? "–",
                "\(request.status)" + (request.validator.map { ", \($0)" } ?? ""), sent, ended,
                "+\(Timeline.seconds(request.startMilliseconds)) → +\(Timeline.seconds(request.endMilliseconds))",
            ]
            text += "| " + cells.map { Report.markdownEscaped($0) }.joined(separator: " | ") + " |\n"
        }
        return text + "\n"
    }

    /// Each output's size and which version each part holds, with its splices.
    static func outputs(_ trace: RunTrace) -> String {
        guard !trace.outputs.isEmpty else { return "No output was inspected.\n" }
        var text = "The resource is \(trace.resourceLength) bytes; the expected content is version "
        text += "\(trace.expectedVersion).\n\n"
        for output in trace.outputs {
            guard output.exists else {
                text += "- `\(output.name)`: no file\n"
                continue
            }
            text += "- `\(output.name)`: \(output.size) bytes"
            if output.segments.isEmpty { text += ", empty" }
            text += "\n"
            for segment in output.segments {
                let what = segment.version.map { "version \($0)" } ?? "bytes matching no version"
                text += "  - \(RunTrace.ByteSpan(segment.range)): \(what)\n"
            }
            if !output.splices.isEmpty {
                text += "  - spliced at offset " + output.splices.map(String.init).joined(separator: ", ") + "\n"
            }
        }
        return text
    }

    /// `- The rule rests on: [RFC 9110 §14.2](url), ...`, or the reason there is none.
    static func references(_ title: String, _ citations: ResultsRows.Citations) -> String {
        switch citations {
        case .cited(let list):
            let linked = list.map { reference in
                RowReferences.url(of: reference).map { "[\(reference)](\($0))" } ?? reference
            }
            return "- \(title): " + linked.joined(separator: ", ") + "\n"
        case .none(let reason):
            return "- \(title): none (\(reason))\n"
        }
    }

    static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }
}
