import RangeServer

/// Why a row's rule is worth believing: the RFC sections it rests on and the public reports of its failure in real
/// clients, from the scenario file's `rfc` and `seen-in` keys (docs/conformance.md, "What each row rests on").
///
/// Every catalogue row carries both, each a list or `{"none": "why"}`, so a reader of a red cell can cite the rule
/// and find the upstream report, and a row without one says so instead of staying silent.
package struct RowReferences: Hashable, Sendable, Encodable {
    /// The RFC sections (`RFC 9110 §13.1.5`), or why none applies.
    public var rfc: ScenarioCitations
    /// Reports in real clients (`curl/curl#1163`), or why there are none.
    public var seenIn: ScenarioCitations

    /// Makes the references of a row.
    ///
    /// - Parameters:
    ///   - rfc: the RFC sections, or why none applies.
    ///   - seenIn: the reports, or why there are none.
    public init(rfc: ScenarioCitations, seenIn: ScenarioCitations) {
        self.rfc = rfc
        self.seenIn = seenIn
    }

    /// The references a catalogue row must carry.
    ///
    /// - Parameters:
    ///   - scenario: the loaded scenario.
    /// - Returns: its `rfc` and `seen-in`.
    /// - Throws: `ConformanceError.invalidExpectation` naming the scenario and the missing key.
    static func required(of scenario: Scenario) throws(ConformanceError) -> RowReferences {
        func missing(_ kind: ScenarioCitations.Kind) -> ConformanceError {
            .invalidExpectation(
                "\(scenario.name): no \"\(kind.rawValue)\" key: a catalogue row lists \(kind.form)s, "
                    + "or says {\"none\": \"why\"}")
        }
        guard let rfc = scenario.rfc else { throw missing(.rfc) }
        guard let seenIn = scenario.seenIn else { throw missing(.seenIn) }
        return RowReferences(rfc: rfc, seenIn: seenIn)
    }

    /// Where a reference can be read: an RFC section on rfc-editor.org
    /// (`https://www.rfc-editor.org/rfc/rfc9110#section-13.1.5`, `#appendix-A.2` for an appendix), an issue or pull
    /// request on GitHub (`https://github.com/curl/curl/issues/1163`, which GitHub forwards to the pull request when
    /// the number is one); nil for text that is neither.
    ///
    /// - Parameters:
    ///   - reference: one element of `rfc` or `seen-in`.
    /// - Returns: the URL.
    public static func url(of reference: String) -> String? {
        if ScenarioCitations.Kind.rfc.accepts(reference) {
            let words = reference.split(separator: " ")
            let section = words[2].dropFirst()
            let anchor = section.first?.isLetter == true ? "appendix" : "section"
            return "https://www.rfc-editor.org/rfc/rfc\(words[1])#\(anchor)-\(section)"
        }
        if ScenarioCitations.Kind.seenIn.accepts(reference), let hash = reference.lastIndex(of: "#") {
            let number = reference[reference.index(after: hash)...]
            return "https://github.com/\(reference[..<hash])/issues/\(number)"
        }
        return nil
    }

    private enum CodingKeys: String, CodingKey {
        case rfc
        case seenIn = "seen-in"
    }
}
