import Foundation
import HTTPVocabulary

/// Pure parsers for the response header values the engine relies on.
enum HeaderValues {
    /// Parses a non-negative decimal integer made only of ASCII digits.
    static func digits<S: StringProtocol>(_ text: S) -> Int64? {
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }

    /// Parses `Retry-After` as delta-seconds or an HTTP-date relative to `now`; a past date gives zero.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if let seconds = digits(v) { return .seconds(seconds) }
        guard let date = HTTPDate(parsing: v) else { return nil }
        let delta = Date(timeIntervalSince1970: TimeInterval(date.secondsSince1970)).timeIntervalSince(now)
        return delta <= 0 ? .zero : .milliseconds(Int64((delta * 1000).rounded(.up)))
    }

    /// The SHA-256 in a `Repr-Digest` field (RFC 9530), as lower-case hex.
    ///
    /// - Parameter value: The field value; parsed as a structured-field Dictionary by ``ReprDigest``.
    /// - Returns: `nil` when the field is malformed, carries no `sha-256` member, or one that is not 32 bytes.
    static func sha256FromReprDigest(_ value: String) -> String? {
        guard let digest = ReprDigest(parsing: value)?["sha-256"], digest.count == 32 else { return nil }
        return hex(digest)
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
