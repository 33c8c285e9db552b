/// Fuzzes the validator parsers used by `If-Range`, `If-Match` and `If-None-Match`, and the HTTP-date
/// parser used by `If-Range`, `If-Modified-Since` and `If-Unmodified-Since`.
///
/// Invariants: a parsed entity-tag prints back to a value that parses to the same tag and holds no
/// quote; a tag list prints and parses back to itself; a parsed date prints as an IMF-fixdate that parses
/// back to the same instant; any timestamp in years 0...9999 round-trips through `headerValue`.
@_cdecl("LLVMFuzzerTestOneInput")
public func validatorsFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = fuzzBytes(start, count)
    let text = String(decoding: bytes, as: UTF8.self)

    if let tag = EntityTag(parsing: text) {
        fuzzCheck(!tag.opaqueTag.utf8.contains(UInt8(ascii: "\"")), "opaque tag without quotes")
        fuzzCheck(EntityTag(parsing: tag.headerValue) == tag, "entity-tag round trip of \(tag.headerValue)")
        fuzzCheck(tag.matchesWeakly(tag), "weak comparison is reflexive")
        fuzzCheck(tag.matchesStrongly(tag) == !tag.isWeak, "strong comparison is reflexive for strong tags")
    }

    switch EntityTagCondition.parse(text) {
    case nil:
        break
    case .any:
        fuzzCheck(
            text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") } == [UInt8(ascii: "*")], "* only")
    case .tags(let tags):
        fuzzCheck(!tags.isEmpty, "a tag list is not empty")
        let printed = tags.map(\.headerValue).joined(separator: ", ")
        fuzzCheck(EntityTagCondition.parse(printed) == .tags(tags), "tag list round trip of \(printed)")
    }

    if let date = HTTPDate(parsing: text) {
        let printed = date.headerValue
        if date.secondsSince1970 <= latestFourDigitYear {
            fuzzCheck(HTTPDate(parsing: printed) == date, "date round trip of \(text) via \(printed)")
            fuzzCheck(printed.utf8.count == 29, "IMF-fixdate is 29 bytes: \(printed)")
        } else {
            // Only a leap second at the very end of 9999 lands past it, on 10000-01-01, which has no
            // four-digit spelling (as `headerValue` documents).
            fuzzCheck(date.secondsSince1970 == latestFourDigitYear + 1, "only 9999-12-31T23:59:60 passes 9999: \(text)")
        }
    }

    // Any instant of years 0000...9999 round-trips, whatever bytes chose it.
    if bytes.count >= 8 {
        let raw = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let earliest: Int64 = -62_167_219_200  // 0000-01-01T00:00:00Z
        let seconds = earliest + Int64(raw % UInt64(latestFourDigitYear - earliest + 1))
        let date = HTTPDate(secondsSince1970: seconds)
        fuzzCheck(
            HTTPDate(parsing: date.headerValue) == date, "timestamp \(seconds) round trip via \(date.headerValue)")
    }
    return 0
}

/// 9999-12-31T23:59:59Z, the last instant an IMF-fixdate can spell.
private let latestFourDigitYear: Int64 = 253_402_300_799
