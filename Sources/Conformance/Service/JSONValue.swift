import Foundation

/// Any JSON value, for passing a scenario's `expect` section through to the API as the file wrote it, and for the
/// results files' shared parts and page data.
enum JSONValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses a JSON document without `Decodable`: `init(from:)` can only find a value's kind by trying each and
    /// catching the failure, two or three thrown errors for every string and number. Over a results table (about
    /// 130,000 values) that is slow everywhere and far slower in a test process, where Swift Testing records a
    /// backtrace for every error thrown; `JSONSerialization` tells the kinds apart without throwing.
    ///
    /// - Parameters:
    ///   - data: the document.
    /// - Throws: `JSONSerialization`'s error when the data is not JSON.
    init(json data: Data) throws {
        self.init(foundation: try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
    }

    /// The value of what `JSONSerialization` returned.
    private init(foundation value: Any) {
        switch value {
        case let text as String: self = .string(text)
        // Booleans arrive as `NSNumber`s of type char; no JSON number does.
        case let number as NSNumber:
            self = String(cString: number.objCType) == "c" ? .bool(number.boolValue) : .number(number.doubleValue)
        case let items as [Any]: self = .array(items.map(JSONValue.init(foundation:)))
        case let members as [String: Any]: self = .object(members.mapValues(JSONValue.init(foundation:)))
        default: self = .null
        }
    }

    init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [String: JSONValue] = [:]
            for key in keyed.allKeys { members[key.stringValue] = try keyed.decode(JSONValue.self, forKey: key) }
            self = .object(members)
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let value):
            var single = encoder.singleValueContainer()
            // Whole numbers as integers: `"max-requests": 3`, not `3.0`.
            if value.rounded() == value, abs(value) < 1e15 {
                try single.encode(Int64(value))
            } else {
                try single.encode(value)
            }
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .array(let items):
            var unkeyed = encoder.unkeyedContainer()
            for item in items { try unkeyed.encode(item) }
        case .object(let members):
            var keyed = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in members { try keyed.encode(value, forKey: AnyKey(key)) }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
