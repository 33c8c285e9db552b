import Crypto
import Foundation

/// A run token of `rangecheck serve`: `LABEL-ISSUED-RANDOM-CHECK`.
///
/// - `LABEL`: the client label's ASCII letters and digits, lower-cased, anything else a `-`, at most 24 (so a journal
///   line says whose run it was);
/// - `ISSUED`: when the run was handed out, in milliseconds since 1970, base 36;
/// - `RANDOM`: 64 random bits, base 36;
/// - `CHECK`: the first 8 hex digits of the SHA-256 of the rest.
///
/// The service forgets runs (``ConformanceService/Configuration/runRetention``) rather than remembering every token
/// it ever issued, so the token itself says when it was issued: a request naming a forgotten run is told it has
/// expired (410), one naming a string that was never a token is told there is no such run (404). The check is not a
/// secret, only a guard against a made-up string passing as a token.
struct RunToken: Hashable, Sendable {
    /// The token as handed out.
    let text: String
    /// When it was handed out, in milliseconds since 1970.
    let issuedMilliseconds: UInt64

    /// When it was handed out.
    var issued: Date { Date(timeIntervalSince1970: Double(issuedMilliseconds) / 1000) }

    /// Makes a fresh token for `label`.
    ///
    /// - Parameters:
    ///   - label: the client label.
    ///   - issued: when the run is handed out.
    init(label: String, issued: Date) {
        let readable = String(
            label.lowercased().unicodeScalars.map {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII ? Character($0) : "-"
            }
            .prefix(24))
        let milliseconds = Self.milliseconds(issued)
        let body =
            "\(readable)-\(String(milliseconds, radix: 36))-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        text = "\(body)-\(Self.check(body))"
        issuedMilliseconds = milliseconds
    }

    /// Reads a token back; nil when `text` is not one this service could have issued.
    ///
    /// - Parameters:
    ///   - text: the token from a request.
    init?(parsing text: String) {
        guard text.utf8.count <= 200, let lastDash = text.lastIndex(of: "-") else { return nil }
        let body = text[..<lastDash]
        guard text[text.index(after: lastDash)...] == Self.check(body) else { return nil }
        let parts = body.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 3, UInt64(parts[parts.count - 1], radix: 36) != nil,
            let milliseconds = UInt64(parts[parts.count - 2], radix: 36)
        else { return nil }
        self.text = text
        issuedMilliseconds = milliseconds
    }

    /// `date` in whole milliseconds since 1970, as a token carries it.
    static func milliseconds(_ date: Date) -> UInt64 {
        UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    private static func check(_ body: some StringProtocol) -> String {
        SHA256.hash(data: Data(body.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}
