/// A section of a scenario file whose schema belongs to another module (the conformance harness's `expect`),
/// kept as parsed, with the line and column of every value.
///
/// The owner decodes it with ``decode(_:)`` into its own `Decodable` type, straight from the parsed tree: the
/// file is parsed once, and a bad value is reported at its line and column like every other scenario error.
public struct ScenarioSection: Hashable, Sendable {
    let value: LocatedJSON
    /// How the file is named in messages.
    let source: String
    /// The section's key path in the file, e.g. `expect`.
    let path: String

    init(value: LocatedJSON, source: String, path: String) {
        self.value = value
        self.source = source
        self.path = path
    }

    /// Parses a section from JSON text, as if it stood at `path` in the file `source`.
    ///
    /// - Parameters:
    ///   - text: the section's JSON.
    ///   - source: how to name the file in error messages.
    ///   - path: the section's key path, e.g. `expect`.
    /// - Throws: `RangeServerError.invalidScenario` as `SOURCE:LINE:COLUMN: reason` for a syntax error.
    public init(parsing text: String, source: String, path: String) throws(RangeServerError) {
        do {
            value = try LocatedJSONParser.parse(Array(text.utf8))
        } catch {
            throw .invalidScenario("\(source):\(error.location): \(error.reason)")
        }
        self.source = source
        self.path = path
    }

    /// Decodes the section into `type`.
    ///
    /// Numbers decode into any numeric type they fit exactly (`2.5` is not an `Int`). A `DecodingError` that
    /// `type` throws, for example `dataCorruptedError(forKey:in:debugDescription:)`, is reported at the value
    /// its coding path leads to, with its description as the reason.
    ///
    /// - Parameters:
    ///   - type: the type to decode.
    /// - Returns: the decoded value.
    /// - Throws: `RangeServerError.invalidScenario` as `SOURCE:LINE:COLUMN: PATH: reason`, for example
    ///   `s.json:12:16: expect.steps[0].kill-at: must be a size like 1M or a percentage like 25%`.
    public func decode<T: Decodable>(_ type: T.Type) throws(RangeServerError) -> T {
        do {
            return try T(from: LocatedJSONDecoder(value: value, codingPath: []))
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw .invalidScenario("\(source):\(value.location): \(path): \(error)")
        }
    }

    private func describe(_ error: DecodingError) -> RangeServerError {
        let codingPath: [any CodingKey]
        let reason: String
        switch error {
        case .keyNotFound(let key, let context):
            codingPath = context.codingPath + [key]
            reason = context.debugDescription
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            codingPath = context.codingPath
            reason = context.debugDescription
        @unknown default:
            return .invalidScenario("\(source):\(value.location): \(path): \(error)")
        }
        var text = path
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += "." + key.stringValue }
        }
        return .invalidScenario("\(source):\(location(of: codingPath)): \(text): \(reason)")
    }

    /// Where the value at `codingPath` is, or its nearest enclosing value when it is absent (a missing key).
    private func location(of codingPath: [any CodingKey]) -> SourceLocation {
        var current = value
        for key in codingPath {
            switch current.kind {
            case .object(let members):
                guard let member = members.first(where: { $0.key == key.stringValue }) else { return current.location }
                current = member.value
            case .array(let items):
                guard let index = key.intValue, items.indices.contains(index) else { return current.location }
                current = items[index]
            default:
                return current.location
            }
        }
        return current.location
    }
}
