/// Parses and formats byte counts written as decimal digits with an optional binary suffix.
///
/// The grammar is `DIGITS [K|M|G|T]`, case-insensitive, where the suffixes are powers of 1024
/// (`2400K` is 2,457,600 bytes, `1T` is 2^40). It is used for fault sizes (`drop-after=2400K`)
/// and for the size in `/bytes/{size}`. Signs, fractions, spaces and other suffixes are rejected,
/// so that a typo answers 400 instead of silently meaning something else.
package enum ByteSize {
    /// The multiplier for each accepted suffix, largest first so that `format` picks the shortest form.
    private static let suffixes: [(letter: Character, multiplier: UInt64)] = [
        ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10),
    ]

    /// Parses a byte count.
    ///
    /// - Parameters:
    ///   - text: decimal digits with an optional `K`, `M`, `G` or `T` suffix (1024-based, any case).
    /// - Returns: the number of bytes, or `nil` when the text is empty, malformed or overflows `UInt64`.
    package static func parse(_ text: String) -> UInt64? {
        var digits = Substring(text)
        var multiplier: UInt64 = 1
        if let last = digits.last, !last.isASCII || !last.isNumber {
            guard let suffix = suffixes.first(where: { String($0.letter) == last.uppercased() }) else {
                return nil
            }
            multiplier = suffix.multiplier
            digits = digits.dropLast()
        }
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for scalar in digits.unicodeScalars {
            // Only ASCII digits: `Character.isNumber` would also accept other scripts' digits and fractions.
            guard scalar.value >= 0x30, scalar.value <= 0x39 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(scalar.value - 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    /// Formats a byte count in its shortest exact form, the inverse of `parse`.
    ///
    /// - Parameters:
    ///   - bytes: the count to format.
    /// - Returns: the count with the largest suffix that divides it exactly (`2457600` → `2400K`,
    ///   `1000` → `1000`, `0` → `0`).
    package static func format(_ bytes: UInt64) -> String {
        guard bytes != 0 else { return "0" }
        for suffix in suffixes where bytes % suffix.multiplier == 0 {
            return "\(bytes / suffix.multiplier)\(suffix.letter)"
        }
        return String(bytes)
    }
}
