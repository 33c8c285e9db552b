/// What a catalogue row rests on, or why nothing does: the value of a scenario file's `rfc` or `seen-in` key.
///
/// In the file it is either a non-empty list of distinct references (`["RFC 9110 §13.1.5", "RFC 9110 §14.2"]`,
/// `["curl/curl#1163"]`) or `{"none": "why"}`, so a row without a reference says why rather than leaving the
/// reader to guess. The server only checks the form; the conformance harness shows the values in its reports and
/// requires both keys of every row it runs.
public enum ScenarioCitations: Hashable, Sendable, Encodable {
    /// The references, in the order the file lists them.
    case cited([String])
    /// No reference, and why (`{"none": "..."}`).
    case none(reason: String)

    /// The references; empty for ``none(reason:)``.
    public var references: [String] {
        if case .cited(let references) = self { references } else { [] }
    }

    /// The reason there is no reference; nil when there are references.
    public var noneReason: String? {
        if case .none(let reason) = self { reason } else { nil }
    }

    /// Encodes as the file writes it: an array of strings, or `{"none": "why"}`.
    ///
    /// - Parameters:
    ///   - encoder: the encoder.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .cited(let references):
            var container = encoder.singleValueContainer()
            try container.encode(references)
        case .none(let reason):
            var container = encoder.container(keyedBy: NoneKey.self)
            try container.encode(reason, forKey: .none)
        }
    }

    private enum NoneKey: String, CodingKey {
        case none
    }

    /// The two keys that carry citations, and the form each reference takes.
    public enum Kind: String, CaseIterable, Sendable {
        /// `rfc`: sections of an RFC, `RFC 9110 §13.1.5` (an appendix as `RFC 9110 §A.2`).
        case rfc
        /// `seen-in`: public reports of the row's failure in a real client, `owner/repo#N`.
        case seenIn = "seen-in"

        /// The form a reference must take, for messages: `RFC NNNN §N.N` or `owner/repo#N`.
        public var form: String {
            switch self {
            case .rfc: "a section like \"RFC 9110 §13.1.5\""
            case .seenIn: "a GitHub issue or pull request like \"curl/curl#1163\""
            }
        }

        /// Whether `text` is a well-formed reference of this kind.
        ///
        /// - Parameters:
        ///   - text: one list element.
        /// - Returns: true for `RFC 9110 §13.1.5` (`rfc`) or `curl/curl#1163` (`seen-in`).
        public func accepts(_ text: String) -> Bool {
            switch self {
            case .rfc: Self.isRFCSection(text)
            case .seenIn: Self.isIssueReference(text)
            }
        }

        /// `RFC` and a number without a leading zero, a space, `§`, then a section: a number or a capital letter
        /// (an appendix), and any number of `.N` below it.
        static func isRFCSection(_ text: String) -> Bool {
            guard text.hasPrefix("RFC ") else { return false }
            let rest = text.dropFirst(4)
            guard let space = rest.firstIndex(of: " ") else { return false }
            let number = rest[..<space]
            guard isNumber(number), number.count <= 5 else { return false }
            let section = rest[rest.index(after: space)...]
            guard section.first == "§" else { return false }
            let parts = section.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
            guard let first = parts.first else { return false }
            let firstIsAppendix = first.count == 1 && first.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) }
            guard firstIsAppendix || isNumber(first) else { return false }
            return parts.dropFirst().allSatisfy(isNumber)
        }

        /// `owner/repo#N`: a GitHub owner (letters, digits and `-`), a repository name (letters, digits, `.`, `_`,
        /// `-`), and an issue or pull request number without a leading zero.
        static func isIssueReference(_ text: String) -> Bool {
            guard let slash = text.firstIndex(of: "/"), let hash = text.lastIndex(of: "#"), slash < hash else {
                return false
            }
            let owner = text[..<slash]
            let repository = text[text.index(after: slash)..<hash]
            let number = text[text.index(after: hash)...]
            let ownerIsValid =
                (1...39).contains(owner.count) && owner.first != "-"
                && owner.unicodeScalars.allSatisfy { $0.isASCIILetterOrDigit || $0 == "-" }
            let repositoryIsValid =
                (1...100).contains(repository.count) && repository != "." && repository != ".."
                && repository.unicodeScalars.allSatisfy {
                    $0.isASCIILetterOrDigit || $0 == "." || $0 == "_" || $0 == "-"
                }
            return ownerIsValid && repositoryIsValid && isNumber(number)
        }

        /// Decimal digits without a leading zero.
        private static func isNumber(_ text: Substring) -> Bool {
            !text.isEmpty && text.first != "0" && text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
        }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetterOrDigit: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}
