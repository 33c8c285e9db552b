import Foundation
import RangeServer

/// The rows of the results table: `docs/results/scenarios.json`, each scenario with its description, what its rule
/// rests on (`rfc`, `seen-in`) and its scenario file as it was when last recorded, so the page and the bug reports
/// need nothing outside `docs/results/`.
package struct ResultsRows: Codable, Hashable, Sendable {
    /// The layout's version: 1.
    public var format = 1
    /// The rows, in name order.
    public var scenarios: [Row]

    /// One row.
    public struct Row: Codable, Hashable, Sendable {
        /// The scenario's name.
        public var name: String
        /// What it exercises.
        public var description: String
        /// The RFC sections its rule rests on, or why none.
        public var rfc: Citations
        /// Public reports of its failure in real clients, or why none.
        public var seenIn: Citations
        /// The scenario file's text (`fixtures/scenarios/NAME.json`), when it could be read at recording.
        public var file: String?

        private enum CodingKeys: String, CodingKey {
            case name, description, rfc, file
            case seenIn = "seen-in"
        }
    }

    /// A row's `rfc` or `seen-in`, as the scenario file writes it: a list, or `{"none": "why"}`.
    public enum Citations: Codable, Hashable, Sendable {
        /// The references.
        case cited([String])
        /// None, and why.
        case none(String)

        /// Reads either form.
        ///
        /// - Parameters:
        ///   - decoder: the decoder.
        public init(from decoder: any Decoder) throws {
            if let list = try? decoder.singleValueContainer().decode([String].self) {
                self = .cited(list)
                return
            }
            let container = try decoder.container(keyedBy: NoneKey.self)
            self = .none(try container.decode(String.self, forKey: .none))
        }

        /// Writes the form it was read in.
        ///
        /// - Parameters:
        ///   - encoder: the encoder.
        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .cited(let list):
                var container = encoder.singleValueContainer()
                try container.encode(list)
            case .none(let reason):
                var container = encoder.container(keyedBy: NoneKey.self)
                try container.encode(reason, forKey: .none)
            }
        }

        /// The same citations from the scenario's own type.
        init(_ citations: ScenarioCitations) {
            switch citations {
            case .cited(let list): self = .cited(list)
            case .none(let reason): self = .none(reason)
            }
        }

        /// The references; empty for none.
        public var references: [String] { if case .cited(let list) = self { list } else { [] } }

        private enum NoneKey: String, CodingKey {
            case none
        }
    }

    /// Makes the rows.
    ///
    /// - Parameters:
    ///   - scenarios: the rows, in any order.
    public init(scenarios: [Row]) { self.scenarios = scenarios.sorted { $0.name < $1.name } }

    /// A row by name.
    public func row(_ name: String) -> Row? { scenarios.first { $0.name == name } }

    /// The rows with `newer` replacing those of the same name and the others kept: a row the catalogue dropped stays
    /// while an older results file may still show it.
    ///
    /// - Parameters:
    ///   - newer: rows recorded now.
    /// - Returns: the merged rows.
    public func merged(with newer: [Row]) -> ResultsRows {
        var byName = Dictionary(uniqueKeysWithValues: scenarios.map { ($0.name, $0) })
        for row in newer { byName[row.name] = row }
        return ResultsRows(scenarios: Array(byName.values))
    }

    /// The file's text: one row per line.
    ///
    /// - Returns: the JSON, ending with a newline.
    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let rows = scenarios.map { row in
            "    " + String(decoding: (try? encoder.encode(row)) ?? Data("null".utf8), as: UTF8.self)
        }
        return "{\n  \"format\": \(format),\n  \"scenarios\": [\n" + rows.joined(separator: ",\n") + "\n  ]\n}\n"
    }
}
