/// A `Decoder` over a ``LocatedJSON`` tree: `Decodable` types read a scenario section without parsing it twice.
///
/// Type mismatches are `DecodingError.typeMismatch` with a reason such as `must be a string, found a number`;
/// ``ScenarioSection`` turns the coding path into a line and column.
struct LocatedJSONDecoder: Decoder {
    let value: LocatedJSON
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value.kind else {
            throw LocatedJSONDecoder.mismatch([String: String].self, "an object", value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, object: value, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value.kind else {
            throw LocatedJSONDecoder.mismatch([String].self, "an array", value, codingPath)
        }
        return UnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }

    static func mismatch(
        _ type: Any.Type, _ expected: String, _ value: LocatedJSON, _ codingPath: [any CodingKey]
    ) -> DecodingError {
        .typeMismatch(
            type, .init(codingPath: codingPath, debugDescription: "must be \(expected), found \(value.kindName)"))
    }
}

/// An array index as a coding key.
private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// Decodes scalars; containers and other `Decodable` types go through a nested ``LocatedJSONDecoder``.
private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: LocatedJSON
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool {
        if case .null = value.kind { true } else { false }
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value.kind else {
            throw LocatedJSONDecoder.mismatch(type, "true or false", value, codingPath)
        }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value.kind else {
            throw LocatedJSONDecoder.mismatch(type, "a string", value, codingPath)
        }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double { try number(type, "a number") }
    func decode(_ type: Float.Type) throws -> Float { try number(type, "a number") }
    func decode(_ type: Int.Type) throws -> Int { try number(type, "an integer") }
    func decode(_ type: Int8.Type) throws -> Int8 { try number(type, "an integer") }
    func decode(_ type: Int16.Type) throws -> Int16 { try number(type, "an integer") }
    func decode(_ type: Int32.Type) throws -> Int32 { try number(type, "an integer") }
    func decode(_ type: Int64.Type) throws -> Int64 { try number(type, "an integer") }
    func decode(_ type: UInt.Type) throws -> UInt { try number(type, "a non-negative integer") }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try number(type, "a non-negative integer") }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try number(type, "a non-negative integer") }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try number(type, "a non-negative integer") }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try number(type, "a non-negative integer") }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: LocatedJSONDecoder(value: value, codingPath: codingPath))
    }

    /// The number's text as written, read by the type itself: `2.5` is not an `Int`, `300` not a `UInt8`.
    private func number<T: LosslessStringConvertible>(_ type: T.Type, _ expected: String) throws -> T {
        guard case .number(let text) = value.kind else {
            throw LocatedJSONDecoder.mismatch(type, expected, value, codingPath)
        }
        if let number = T(text) { return number }
        // An integer type does not read exponents or fractions such as `1e3` or `2.0`.
        if let double = Double(text), double == double.rounded(), abs(double) < 1e18,
            let number = T(String(Int64(double)))
        {
            return number
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: codingPath, debugDescription: "must be \(expected), found \(text)"))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [LocatedJSON.Member]
    let object: LocatedJSON
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { members.contains { $0.key == key.stringValue } }

    private func member(_ key: Key) throws -> LocatedJSON {
        guard let member = members.first(where: { $0.key == key.stringValue }) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "is missing (a required key)"))
        }
        return member.value
    }

    private func decoder(_ key: Key) throws -> LocatedJSONDecoder {
        LocatedJSONDecoder(value: try member(key), codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key).kind { true } else { false }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: decoder(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Bool(from: decoder(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try String(from: decoder(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Double(from: decoder(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Float(from: decoder(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Int(from: decoder(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Int8(from: decoder(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Int16(from: decoder(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Int32(from: decoder(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Int64(from: decoder(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try UInt(from: decoder(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try UInt8(from: decoder(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try UInt16(from: decoder(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try UInt32(from: decoder(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try UInt64(from: decoder(key)) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { LocatedJSONDecoder(value: object, codingPath: codingPath) }

    func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [LocatedJSON]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [LocatedJSON], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The next element's decoder; the index moves on only once the element decoded.
    private func next() throws -> LocatedJSONDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath, debugDescription: "has only \(items.count) elements"))
        }
        return LocatedJSONDecoder(
            value: items[currentIndex], codingPath: codingPath + [IndexKey(intValue: currentIndex)])
    }

    private mutating func element<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try T(from: next())
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try next().value.kind else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try element(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try element(type) }
    mutating func decode(_ type: String.Type) throws -> String { try element(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try element(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try element(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try element(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try element(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try element(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try element(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try element(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try element(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try element(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try element(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try element(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try element(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try next().container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try next().unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = try next()
        currentIndex += 1
        return decoder
    }
}
