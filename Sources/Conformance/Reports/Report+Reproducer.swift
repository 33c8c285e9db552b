extension Report {
    /// A reproducer as a shell script to read and paste: the server, the setup, the client, the steps and what to
    /// compare, each under a comment; the words that are not commands are comments.
    ///
    /// - Parameters:
    ///   - reproducer: the reproducer.
    /// - Returns: the script, ending with a newline.
    public static func reproducerScript(_ reproducer: Reproducer) -> String {
        var lines = ["# 1. the server, in a terminal of its own (stop it with Ctrl-C)", reproducer.server]
        lines += ["# 2. a fresh directory for the client"] + reproducer.setup
        lines.append("# 3. the client" + (reproducer.note.map { ": \($0)" } ?? ""))
        lines.append(reproducer.clientIsCommand ? reproducer.client : "#    " + reproducer.client)
        if !reproducer.steps.isEmpty {
            lines.append("# 4. while it runs:")
            lines += reproducer.steps.map { "#    \($0)" }
        }
        let compare = reproducer.compare
        lines.append("# \(reproducer.steps.isEmpty ? 4 : 5). compare: \(compare.expected)")
        if let digest = compare.sha256 { lines.append("#    expected SHA-256: \(digest)") }
        for rule in compare.rules { lines.append("#    \(rule)") }
        lines.append("#    this run: \(compare.observed)")
        if !compare.outputs.isEmpty {
            lines.append("ls -l \(ShellQuoting.line(compare.outputs)); sha256sum \(ShellQuoting.line(compare.outputs))")
        }
        lines.append(compare.journal)
        if let kept = reproducer.kept {
            lines.append("# the run's own outputs, client logs and journal.jsonl are kept in \(kept)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A failed cell's reproducer for the Markdown report, folded away: `<details>` with the script as a `sh` block.
    ///
    /// - Parameters:
    ///   - cell: the cell.
    /// - Returns: the block, or nil for a cell without a reproducer.
    static func reproducerMarkdown(_ cell: MatrixCell) -> String? {
        guard let reproducer = cell.reproducer else { return nil }
        let summary = htmlEscaped("Reproduce \(cell.scenario) × \(cell.client) (\(cell.label))")
        return "<details><summary>\(summary)</summary>\n\n```sh\n\(reproducerScript(reproducer))```\n\n</details>\n"
    }

    /// Every failed cell's reproducer, in row then column order, under a heading; empty when there is none.
    static func reproducersMarkdown(_ matrix: Matrix) -> String {
        let blocks = orderedCells(matrix).compactMap(reproducerMarkdown)
        return blocks.isEmpty ? "" : "\n### Reproducers\n\n" + blocks.joined(separator: "\n")
    }

    /// A failed cell's reproducer in its HTML detail: a heading and the script.
    ///
    /// - Parameters:
    ///   - cell: the cell.
    /// - Returns: the HTML, empty for a cell without a reproducer.
    static func reproducerHTML(_ cell: MatrixCell) -> String {
        guard let reproducer = cell.reproducer else { return "" }
        return "<h3>Reproduce by hand</h3>\n<pre class=\"reproducer\"><code>"
            + htmlEscaped(reproducerScript(reproducer)) + "</code></pre>\n"
    }
}
