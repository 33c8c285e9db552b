/// A JSON value kept as data, for parts of a file whose schema belongs to someone else
/// (a scenario's `expect` object is defined by the conformance harness).
///
/// Numbers are `Double`: exact for integers up to 2^53, which covers every byte count this project uses.
public enum JSONValue: Hashable, Sendable, Codable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// Any JSON number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object; JSON objects are unordered, and duplicate keys are rejected by the scenario loader.
    case object([String: JSONValue])

    /// Decodes any JSON value.
    ///
    /// - Parameters:
    ///   - decoder: a decoder positioned at the value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Bool before number: some decoders would read `true` as 1.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it came from.
    ///
    /// - Parameters:
    ///   - encoder: the encoder to write to.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The members when this is an object, otherwise `nil`.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { members } else { nil }
    }
}
