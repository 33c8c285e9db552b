import RangeServer

extension Report {
    /// The Markdown footnote mark a row's name carries in the table, `[^plain]`, when the matrix knows what the row
    /// rests on; empty otherwise. ``markdownReferenceFootnotes(_:rows:)`` writes the footnotes.
    static func markdownReferenceMark(_ matrix: Matrix, scenario: String) -> String {
        matrix.references[scenario] == nil ? "" : "[^\(scenario)]"
    }

    /// One footnote per row of the table that has references, in row order: `[^plain]: rfc: RFC 9110 §9.3.1;
    /// seen in: none (why)`, each reference linked to where it can be read. Empty when no row has any.
    ///
    /// Scenario names are letters, digits, `.`, `_` and `-` (the loader checks), so they serve as footnote labels.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    ///   - rows: the rows the table shows.
    /// - Returns: the footnotes, each on its own line, preceded by a blank line.
    static func markdownReferenceFootnotes(_ matrix: Matrix, rows: [String]) -> String {
        let lines = rows.compactMap { scenario -> String? in
            guard let references = matrix.references[scenario] else { return nil }
            return "[^\(scenario)]: rfc: " + markdownCitations(references.rfc) + "; seen in: "
                + markdownCitations(references.seenIn)
        }
        return lines.isEmpty ? "" : "\n" + lines.joined(separator: "\n") + "\n"
    }

    /// `[RFC 9110 §13.1.5](https://...), [curl/curl#1163](https://...)`, or `none (why)`.
    static func markdownCitations(_ citations: ScenarioCitations) -> String {
        switch citations {
        case .cited(let references):
            references.map { reference in
                RowReferences.url(of: reference).map { "[\(reference)](\($0))" } ?? markdownEscaped(reference)
            }.joined(separator: ", ")
        case .none(let reason): "none (" + markdownEscaped(reason) + ")"
        }
    }

    /// The detail view's account of what the row rests on: a definition list of its RFC sections and of the
    /// reports of its failure in real clients, each linked; empty when the matrix does not know them.
    static func referencesHTML(_ references: RowReferences?) -> String {
        guard let references else { return "" }
        return "<dl class=\"references\"><dt>RFC</dt><dd>\(htmlCitations(references.rfc))</dd>"
            + "<dt>Seen in</dt><dd>\(htmlCitations(references.seenIn))</dd></dl>\n"
    }

    /// Linked references separated by commas, or `none: why`.
    static func htmlCitations(_ citations: ScenarioCitations) -> String {
        switch citations {
        case .cited(let references):
            references.map { reference in
                guard let url = RowReferences.url(of: reference) else { return htmlEscaped(reference) }
                return "<a href=\"\(htmlEscaped(url))\">\(htmlEscaped(reference))</a>"
            }.joined(separator: ", ")
        case .none(let reason): "none: " + htmlEscaped(reason)
        }
    }
}
