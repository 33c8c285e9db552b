import RawStructuredFieldValues

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A `Repr-Digest` field (RFC 9530 §3): a structured-field Dictionary (RFC 9651) from algorithm keys to byte
/// sequences, such as `sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:`.
///
/// Parsed and written by swift-http-structured-headers, so keys, parameters and byte sequences follow RFC 9651
/// exactly: a field that is not a valid Dictionary is ignored as a whole, as §4.2 of that RFC requires.
public struct ReprDigest: Hashable, Sendable {
    /// The digests in field order, keyed by algorithm (`sha-256`, `sha-512`).
    public var digests: [(algorithm: String, bytes: [UInt8])] {
        get { storage.map { ($0.algorithm, $0.bytes) } }
        set { storage = newValue.map { Entry(algorithm: $0.algorithm, bytes: $0.bytes) } }
    }

    private var storage: [Entry]

    private struct Entry: Hashable, Sendable {
        var algorithm: String
        var bytes: [UInt8]
    }

    /// Creates a field value from digests.
    ///
    /// - Parameter digests: Algorithm keys (lower case, as RFC 9651 keys must be) and their digest bytes.
    public init(_ digests: [(algorithm: String, bytes: [UInt8])]) {
        storage = digests.map { Entry(algorithm: $0.algorithm, bytes: $0.bytes) }
    }

    /// Parses a field value.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: `nil` when the value is not a structured-field Dictionary; members that are not byte sequences
    ///   are skipped.
    public init?(parsing value: String) {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return nil }
        var entries: [Entry] = []
        for (key, member) in dictionary {
            // Foundation's decoder on Linux accepts a misplaced '=' and returns other bytes than were meant, which
            // would turn a malformed field into a digest mismatch: only the canonical encoding of its bytes counts.
            guard case .item(let item) = member, case .undecodedByteSequence(let encoded) = item.rfc9651BareItem,
                let decoded = Data(base64Encoded: encoded), decoded.base64EncodedString() == encoded
            else { continue }
            entries.append(Entry(algorithm: key, bytes: Array(decoded)))
        }
        storage = entries
    }

    /// The digest for one algorithm, if the field carries it.
    ///
    /// - Parameter algorithm: The lower-case algorithm key, such as `sha-256`.
    public subscript(algorithm: String) -> [UInt8]? {
        storage.first { $0.algorithm == algorithm }?.bytes
    }

    /// The field value, serialized as RFC 9651 §4.1 requires.
    ///
    /// An algorithm key that is not a valid structured-field key (lower case, digits, `_-.*`) is left out.
    public var headerValue: String {
        var dictionary = OrderedMap<String, ItemOrInnerList>()
        for entry in storage where isValidKey(entry.algorithm) {
            let encoded = Data(entry.bytes).base64EncodedString()
            dictionary[entry.algorithm] = .item(
                Item(bareItem: RFC9651BareItem.undecodedByteSequence(encoded), parameters: OrderedMap()))
        }
        var serializer = StructuredFieldValueSerializer()
        let bytes = (try? serializer.writeDictionaryFieldValue(dictionary)) ?? []
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A `Want-Repr-Digest` field (RFC 9530 §4): a structured-field Dictionary from algorithm keys to preferences
/// 0 to 10, where 0 means "not acceptable".
public struct WantReprDigest: Hashable, Sendable {
    /// Each listed algorithm's preference, in field order.
    public var preferences: [String: Int]

    /// Parses a field value.
    ///
    /// A bare key (`sha-256`, which RFC 9651 reads as the Boolean `true`) counts as preference 1, since senders
    /// write it meaning "yes"; members with other kinds of values are skipped.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: `nil` when the value is not a structured-field Dictionary.
    public init?(parsing value: String) {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return nil }
        var preferences: [String: Int] = [:]
        for (key, member) in dictionary {
            guard case .item(let item) = member else { continue }
            switch item.rfc9651BareItem {
            case .integer(let preference): preferences[key] = Int(clamping: preference)
            case .bool(let wanted): preferences[key] = wanted ? 1 : 0
            default: continue
            }
        }
        self.preferences = preferences
    }

    /// Whether the sender accepts an algorithm: it is listed with a preference above zero.
    ///
    /// - Parameter algorithm: The lower-case algorithm key, such as `sha-256`.
    public func accepts(_ algorithm: String) -> Bool {
        (preferences[algorithm] ?? 0) > 0
    }
}

/// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )` (RFC 9651 §3.1.2).
private func isValidKey(_ key: String) -> Bool {
    var bytes = key.utf8.makeIterator()
    guard let first = bytes.next(), first == UInt8(ascii: "*") || (first >= 0x61 && first <= 0x7A) else {
        return false
    }
    while let byte = bytes.next() {
        let allowed =
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "*")].contains(byte)
        guard allowed else { return false }
    }
    return true
}
