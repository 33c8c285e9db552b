/// The `probability` draw: whether a request's other faults apply, reproducibly.
///
/// The k-th request (k = 1, 2, …) with a given target (path and query exactly as received) since the server
/// started or `POST /_control/reset` draws `x = splitmix64(seed + k · 0x9E3779B97F4A7C15)` (wrapping arithmetic,
/// `seed` from `fault-seed`, default 0) and its faults apply when `x mod 1,000,000 < P · 1,000,000`. The same
/// server, seed and sequence of requests to a target give the same decisions, on any machine.
package enum FaultChance {
    /// One in a million: a probability has at most six decimal places.
    package static let scale: UInt32 = 1_000_000

    /// Whether the draw for the `draw`-th request says the faults apply.
    ///
    /// - Parameters:
    ///   - millionths: the probability in millionths, 1...1_000_000.
    ///   - seed: the `fault-seed`.
    ///   - draw: the request's number among those to its target, from 1.
    /// - Returns: true when the faults apply.
    package static func applies(millionths: UInt32, seed: UInt64, draw: UInt64) -> Bool {
        splitMix64(seed &+ draw &* 0x9E37_79B9_7F4A_7C15) % UInt64(scale) < UInt64(millionths)
    }

    /// SplitMix64's output function (Steele, Lea and Flood, 2014): a well-mixed 64-bit value from any input.
    static func splitMix64(_ input: UInt64) -> UInt64 {
        var z = input
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Parses a probability above 0 and at most 1 with at most six decimal places (`0.5`, `.25`, `1`, `1.0`).
    ///
    /// - Parameters:
    ///   - text: the value as written.
    /// - Returns: the probability in millionths, or nil when malformed, 0 or above 1.
    package static func parseMillionths(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        let isDigits = { (part: Substring) in part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard !text.isEmpty, text != ".", whole.utf8.count <= 7, fraction.utf8.count <= 6, isDigits(whole),
            isDigits(fraction), parts.count == 1 || !fraction.isEmpty
        else { return nil }
        let wholeValue = UInt64(whole.isEmpty ? "0" : whole) ?? 0
        let padded = fraction + String(repeating: "0", count: 6 - fraction.utf8.count)
        let value = wholeValue * UInt64(scale) + (UInt64(padded) ?? 0)
        guard value >= 1, value <= UInt64(scale) else { return nil }
        return UInt32(value)
    }

    /// The canonical text of a probability: `1`, or `0.` and up to six digits without trailing zeros.
    ///
    /// - Parameters:
    ///   - millionths: the probability in millionths.
    /// - Returns: for example `0.5` for 500,000.
    package static func formatMillionths(_ millionths: UInt32) -> String {
        guard millionths < scale else { return "1" }
        var digits = String(millionths)
        digits = String(repeating: "0", count: 6 - digits.utf8.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "0." + digits
    }
}
