import Foundation

/// A run's reproducers as a results file writes them: the parts most of its cells share (the server line, the setup,
/// the steps and the journal query, once `{dir}` and `{run}` stand for the cell's own) written once, under `shared`,
/// and left out of every cell that has them. A column's failed cells then cost their own client line and rules, not
/// the same server line sixty times. Reading the file puts them back: in memory every cell has its whole reproducer.
extension ResultsFile.Run {
    /// The reproducer keys that may be shared, each with where it sits: at the top, or under `compare`.
    static let sharedKeys: [(key: String, inCompare: Bool)] = [
        ("server", false), ("setup", false), ("steps", false), ("journal", true),
    ]

    private enum CodingKeys: String, CodingKey {
        case recorded, commit, command, reproductions, shared, cells
    }

    /// Reads a run, putting each cell's shared reproducer parts back.
    ///
    /// - Parameters:
    ///   - decoder: the decoder.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recorded = try container.decode(String.self, forKey: .recorded)
        commit = try container.decode(String.self, forKey: .commit)
        command = try container.decode(String.self, forKey: .command)
        reproductions = try container.decodeIfPresent(String.self, forKey: .reproductions)
        let shared = try container.decodeIfPresent([String: JSONValue].self, forKey: .shared) ?? [:]
        // `ResultsFile.decode` puts the shared parts back before decoding, so it reads the cells as they are, and
        // never each of its many values as a `JSONValue` (see `JSONValue.init(json:)`).
        guard !shared.isEmpty else {
            cells = try container.decode([ResultsFile.Cell].self, forKey: .cells)
            return
        }
        let written = try container.decode([JSONValue].self, forKey: .cells)
        let decoder = JSONDecoder()
        cells = try written.map { value in
            try decoder.decode(ResultsFile.Cell.self, from: JSONEncoder().encode(Self.filled(value, shared: shared)))
        }
    }

    /// A results file's JSON with every run's shared parts put back into its cells and `shared` removed.
    static func filled(file: JSONValue) -> JSONValue {
        guard case .object(var members) = file, case .object(var runs)? = members["runs"] else { return file }
        for (scheme, run) in runs {
            guard case .object(var fields) = run, case .object(let shared)? = fields["shared"],
                case .array(let cells)? = fields["cells"]
            else { continue }
            fields["cells"] = .array(cells.map { filled($0, shared: shared) })
            fields["shared"] = nil
            runs[scheme] = .object(fields)
        }
        members["runs"] = .object(runs)
        return .object(members)
    }

    /// Writes a run as the file does.
    ///
    /// - Parameters:
    ///   - encoder: the encoder.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recorded, forKey: .recorded)
        try container.encode(commit, forKey: .commit)
        try container.encode(command, forKey: .command)
        try container.encodeIfPresent(reproductions, forKey: .reproductions)
        let (shared, written) = diskForm()
        if !shared.isEmpty { try container.encode(shared, forKey: .shared) }
        try container.encode(written, forKey: .cells)
    }

    /// The shared parts and the cells without them.
    func diskForm() -> (shared: [String: JSONValue], cells: [JSONValue]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let values = cells.map { cell -> JSONValue in
            guard let data = try? encoder.encode(cell),
                let value = try? JSONValue(json: data)
            else { return .null }
            return value
        }
        // Each key's most frequent value among the reproducers (the first to reach the count on a tie).
        var shared: [String: JSONValue] = [:]
        for (key, inCompare) in Self.sharedKeys {
            var counts: [JSONValue: Int] = [:]
            var order: [JSONValue] = []
            for value in values {
                guard let part = Self.part(of: value, key: key, inCompare: inCompare) else { continue }
                if counts[part] == nil { order.append(part) }
                counts[part, default: 0] += 1
            }
            if let best = order.max(by: { counts[$0]! < counts[$1]! }), counts[best]! > 1 { shared[key] = best }
        }
        let written = values.map { value -> JSONValue in
            guard case .object(var cell) = value, case .object(var reproducer)? = cell["reproducer"] else {
                return value
            }
            for (key, inCompare) in Self.sharedKeys {
                guard let common = shared[key] else { continue }
                if inCompare {
                    guard case .object(var compare)? = reproducer["compare"], compare[key] == common else { continue }
                    compare[key] = nil
                    reproducer["compare"] = .object(compare)
                } else if reproducer[key] == common {
                    reproducer[key] = nil
                }
            }
            cell["reproducer"] = .object(reproducer)
            return .object(cell)
        }
        return (shared, written)
    }

    /// A cell's reproducer part, if it has one.
    static func part(of cell: JSONValue, key: String, inCompare: Bool) -> JSONValue? {
        guard case .object(let members) = cell, case .object(let reproducer)? = members["reproducer"] else {
            return nil
        }
        if inCompare {
            guard case .object(let compare)? = reproducer["compare"] else { return nil }
            return compare[key]
        }
        return reproducer[key]
    }

    /// A written cell with the shared parts it lacks put back.
    static func filled(_ cell: JSONValue, shared: [String: JSONValue]) -> JSONValue {
        guard case .object(var members) = cell, case .object(var reproducer)? = members["reproducer"] else {
            return cell
        }
        for (key, inCompare) in sharedKeys {
            guard let common = shared[key] else { continue }
            if inCompare {
                guard case .object(var compare)? = reproducer["compare"], compare[key] == nil else { continue }
                compare[key] = common
                reproducer["compare"] = .object(compare)
            } else if reproducer[key] == nil {
                reproducer[key] = common
            }
        }
        members["reproducer"] = .object(reproducer)
        return .object(members)
    }
}
