/// An entity-tag validator (RFC 9110 §8.8.3): an opaque string, optionally marked weak.
public struct EntityTag: Hashable, Sendable {
    /// The tag between the double quotes, without the quotes.
    public var opaqueTag: String
    /// Whether the tag is weak (`W/"..."`), meaning it only promises semantic equivalence, not identical bytes.
    public var isWeak: Bool

    /// Creates a tag without checking its characters.
    ///
    /// - Parameters:
    ///   - opaqueTag: The tag without quotes; callers must keep it to `etagc` characters (no `"`, no controls).
    ///   - isWeak: Whether the tag is weak.
    public init(opaqueTag: String, isWeak: Bool = false) {
        self.opaqueTag = opaqueTag
        self.isWeak = isWeak
    }

    /// Parses a single entity-tag such as `"abc"` or `W/"abc"`, ignoring surrounding whitespace.
    ///
    /// The weakness prefix is case-sensitive (`W/`, not `w/`), as the grammar requires.
    ///
    /// - Parameter parsing: The field value or list element.
    /// - Returns: `nil` unless the whole value is exactly one entity-tag.
    public init?(parsing value: String) {
        let bytes = Array(value.utf8)
        var index = 0
        var end = bytes.count
        while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
        while end > index, isOptionalWhitespace(bytes[end - 1]) { end -= 1 }
        guard let tag = scanEntityTag(bytes, &index, end: end), index == end else { return nil }
        self = tag
    }

    /// The tag as written in an `ETag` field: `"x"` or `W/"x"`.
    public var headerValue: String {
        isWeak ? "W/\"\(opaqueTag)\"" : "\"\(opaqueTag)\""
    }

    /// Whether the whole value is one strong entity-tag (`"x"`, not `W/"x"`), the kind `If-Range` may carry.
    ///
    /// - Parameter value: A field value such as `ETag`'s.
    /// - Returns: `false` for weak tags and for anything that is not exactly one entity-tag.
    public static func isStrong(_ value: String) -> Bool {
        EntityTag(parsing: value).map { !$0.isWeak } ?? false
    }

    /// Strong comparison (RFC 9110 §8.8.3.2): both tags strong and their opaque tags equal.
    ///
    /// - Parameter other: The tag to compare with.
    /// - Returns: Whether the two tags promise byte-identical representations.
    public func matchesStrongly(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaqueTag == other.opaqueTag
    }

    /// Weak comparison (RFC 9110 §8.8.3.2): opaque tags equal, weakness ignored on either side.
    ///
    /// - Parameter other: The tag to compare with.
    /// - Returns: Whether the two tags promise semantically equivalent representations.
    public func matchesWeakly(_ other: EntityTag) -> Bool {
        opaqueTag == other.opaqueTag
    }
}

/// The value of an `If-Match` or `If-None-Match` field: `*` or a list of entity-tags.
public enum EntityTagCondition: Hashable, Sendable {
    /// `*`: matches whenever a current representation exists.
    case any
    /// An explicit, non-empty list of tags in field order.
    case tags([EntityTag])

    /// Parses `*` or a comma-separated list of entity-tags (RFC 9110 §13.1.1).
    ///
    /// Optional whitespace around commas and empty list elements are accepted. The list is scanned tag by tag rather
    /// than split on commas, because a comma is a legal character inside an opaque tag.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: The condition, or `nil` when the value is malformed or lists no tag at all.
    public static func parse(_ value: String) -> EntityTagCondition? {
        let bytes = Array(value.utf8)
        var index = 0
        var end = bytes.count
        while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
        while end > index, isOptionalWhitespace(bytes[end - 1]) { end -= 1 }
        if end - index == 1, bytes[index] == UInt8(ascii: "*") { return .any }

        // `#entity-tag => [ entity-tag ] *( OWS "," OWS [ entity-tag ] )`
        var tags: [EntityTag] = []
        if index < end, bytes[index] != UInt8(ascii: ",") {
            guard let tag = scanEntityTag(bytes, &index, end: end) else { return nil }
            tags.append(tag)
        }
        while index < end {
            while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
            guard index < end, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
            while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
            if index < end, bytes[index] != UInt8(ascii: ",") {
                guard let tag = scanEntityTag(bytes, &index, end: end) else { return nil }
                tags.append(tag)
            }
        }
        return tags.isEmpty ? nil : .tags(tags)
    }
}

/// Reads one `entity-tag` starting at `index`, leaving `index` just past its closing quote.
private func scanEntityTag(_ bytes: [UInt8], _ index: inout Int, end: Int) -> EntityTag? {
    var cursor = index
    var isWeak = false
    if end - cursor >= 2, bytes[cursor] == UInt8(ascii: "W"), bytes[cursor + 1] == UInt8(ascii: "/") {
        isWeak = true
        cursor += 2
    }
    guard cursor < end, bytes[cursor] == UInt8(ascii: "\"") else { return nil }
    cursor += 1
    let start = cursor
    while cursor < end, isEntityTagCharacter(bytes[cursor]) { cursor += 1 }
    guard cursor < end, bytes[cursor] == UInt8(ascii: "\"") else { return nil }
    let opaqueTag = String(decoding: bytes[start..<cursor], as: UTF8.self)
    index = cursor + 1
    return EntityTag(opaqueTag: opaqueTag, isWeak: isWeak)
}

/// `etagc = %x21 / %x23-7E / obs-text`: visible ASCII except `"`, plus any byte from 0x80.
private func isEntityTagCharacter(_ byte: UInt8) -> Bool {
    byte == 0x21 || (byte >= 0x23 && byte != 0x7F)
}
