import Foundation

/// Pure parsers for the response header values the engine relies on.
enum HeaderValues {
    /// A parsed `Content-Range: bytes first-last/complete` (or `bytes */complete` for 416).
    struct ContentRange: Hashable, Sendable {
        /// The first byte position, `nil` for the unsatisfied form `*/N`.
        var first: Int64?
        /// The last byte position (inclusive), `nil` for the unsatisfied form.
        var last: Int64?
        /// The complete length, `nil` when the server sent `*`.
        var complete: Int64?
    }

    /// Parses `Content-Range`; returns `nil` for anything malformed or a unit other than `bytes`.
    static func contentRange(_ value: String) -> ContentRange? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 6, trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let rest = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        var complete: Int64?
        if parts[1] != "*" {
            guard let n = digits(parts[1]) else { return nil }
            complete = n
        }
        if parts[0] == "*" {
            guard complete != nil else { return nil }
            return ContentRange(first: nil, last: nil, complete: complete)
        }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = digits(bounds[0]), let last = digits(bounds[1]), first <= last else {
            return nil
        }
        if let complete, last >= complete { return nil }
        return ContentRange(first: first, last: last, complete: complete)
    }

    /// Parses a non-negative decimal integer made only of ASCII digits.
    static func digits<S: StringProtocol>(_ text: S) -> Int64? {
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }

    /// Whether an entity tag is strong (`"x"`, not `W/"x"`) and well-formed.
    static func isStrongETag(_ value: String) -> Bool {
        let v = value.trimmingCharacters(in: .whitespaces)
        return v.count >= 2 && v.hasPrefix("\"") && v.hasSuffix("\"")
    }

    /// Parses `Retry-After` as delta-seconds or an HTTP-date relative to `now`; a past date gives zero.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if let seconds = digits(v) { return .seconds(seconds) }
        guard let date = httpDate(v) else { return nil }
        let delta = date.timeIntervalSince(now)
        return delta <= 0 ? .zero : .milliseconds(Int64((delta * 1000).rounded(.up)))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only HTTP-date form senders may generate,
    /// plus the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`).
    static func httpDate(_ value: String) -> Date? {
        let fields = value.split(separator: " ")
        var day: Int?
        var month: Int?
        var year: Int?
        var time: Substring?
        if fields.count == 6, fields[5] == "GMT" {
            day = Int(fields[1])
            month = months.firstIndex(of: fields[2].lowercased()).map { $0 + 1 }
            year = Int(fields[3])
            time = fields[4]
        } else if fields.count == 4, fields[3] == "GMT" {
            let dmy = fields[1].split(separator: "-")
            guard dmy.count == 3 else { return nil }
            day = Int(dmy[0])
            month = months.firstIndex(of: dmy[1].lowercased()).map { $0 + 1 }
            year = Int(dmy[2]).map { $0 < 70 ? $0 + 2000 : ($0 < 100 ? $0 + 1900 : $0) }
            time = fields[2]
        }
        guard let day, let month, let year, let time else { return nil }
        let hms = time.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (1...31).contains(day), hms[0] < 24, hms[1] < 60, hms[2] < 61 else { return nil }
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(identifier: "GMT")
        components.year = year
        components.month = month
        components.day = day
        components.hour = hms[0]
        components.minute = hms[1]
        components.second = hms[2]
        return components.date
    }

    /// Extracts the SHA-256 from `Repr-Digest` (`sha-256=:BASE64:`, possibly among other algorithms) as lower-case hex.
    ///
    /// Works on the UTF-8 bytes: every response is checked, and the Foundation version (trimming, `Data(base64Encoded:)`)
    /// cost more than the rest of the response head's handling.
    static func sha256FromReprDigest(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            if let digest = sha256Member(bytes[start..<end]) { return digest.isEmpty ? nil : digest }
            start = end + 1
        }
        return nil
    }

    /// One `key=:BASE64:` member: `nil` when it is not `sha-256`, empty when it is but is malformed.
    private static func sha256Member(_ member: ArraySlice<UInt8>) -> String? {
        let isSpace = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        var lower = member.startIndex
        var upper = member.endIndex
        while lower < upper, isSpace(member[lower]) { lower += 1 }
        while upper > lower, isSpace(member[upper - 1]) { upper -= 1 }
        guard let eq = member[lower..<upper].firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let key = member[lower..<eq]
        guard asciiCaseInsensitiveEqual(key, "sha-256".utf8) else { return nil }
        var first = eq + 1
        while first < upper, isSpace(member[first]) { first += 1 }
        guard upper - first >= 2, member[first] == UInt8(ascii: ":"), member[upper - 1] == UInt8(ascii: ":") else {
            return ""
        }
        guard let decoded = base64Decode(member[(first + 1)..<(upper - 1)]), decoded.count == 32 else { return "" }
        return hex(decoded)
    }

    /// Standard base64 with padding, as structured fields use it; `nil` for anything else.
    private static func base64Decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): 62
            case UInt8(ascii: "/"): 63
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var index = text.startIndex
        while index < text.endIndex {
            let quad = text[index..<(index + 4)]
            let padding = quad.reversed().prefix { $0 == UInt8(ascii: "=") }.count
            guard padding <= 2, padding == 0 || index + 4 == text.endIndex else { return nil }
            var word: UInt32 = 0
            for c in quad.prefix(4 - padding) {
                guard let v = value(c) else { return nil }
                word = word << 6 | v
            }
            word <<= UInt32(6 * padding)
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            if padding < 2 { out.append(UInt8(truncatingIfNeeded: word >> 8)) }
            if padding < 1 { out.append(UInt8(truncatingIfNeeded: word)) }
            index += 4
        }
        return out
    }

    /// Lower-case hex of some bytes.
    static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        let table = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes {
            out.append(table[Int(b >> 4)])
            out.append(table[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether two URLs share an origin (scheme, host and effective port).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ u: URL) -> Int? { u.port ?? (u.scheme?.lowercased() == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && port(a) == port(b)
    }
}

/// Whether two byte sequences are equal with ASCII letters compared case-insensitively; `lowerCase` must be lower
/// case already. Header names and structured-field keys are ASCII, and this allocates nothing.
func asciiCaseInsensitiveEqual(_ bytes: some Collection<UInt8>, _ lowerCase: some Collection<UInt8>) -> Bool {
    bytes.count == lowerCase.count
        && zip(bytes, lowerCase).allSatisfy { a, b in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(a) ? a | 0x20 == b : a == b
        }
}
