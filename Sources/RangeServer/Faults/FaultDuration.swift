/// Parses and formats the durations used by faults (`delay=250ms`, `stall-for=1.5s`).
///
/// The grammar is `DIGITS [. DIGITS] [ms|s]`, case-insensitive; a bare number means seconds.
/// Precision is one nanosecond; further fractional digits are truncated. Negative values,
/// exponents and anything not matching the grammar are rejected.
package enum FaultDuration {
    private static let nanosecondsPerSecond: UInt64 = 1_000_000_000
    private static let nanosecondsPerMillisecond: UInt64 = 1_000_000

    /// Parses a duration.
    ///
    /// - Parameters:
    ///   - text: for example `250ms`, `1.5s` or `2`.
    /// - Returns: the duration, or `nil` when the text is malformed or too large for `Duration`'s
    ///   nanosecond count (about 292 years).
    package static func parse(_ text: String) -> Duration? {
        guard let nanoseconds = nanoseconds(text), nanoseconds <= UInt64(Int64.max) else { return nil }
        return .nanoseconds(Int64(nanoseconds))
    }

    /// Parses a duration into whole nanoseconds.
    ///
    /// - Parameters:
    ///   - text: for example `250ms`, `1.5s` or `2`.
    /// - Returns: the number of nanoseconds, or `nil` when the text is malformed or overflows `UInt64`.
    package static func nanoseconds(_ text: String) -> UInt64? {
        let lower = text.lowercased()
        let number: Substring
        let unit: UInt64
        // Check "ms" before "s": every "ms" also ends with "s".
        if lower.hasSuffix("ms") {
            number = lower.dropLast(2)
            unit = nanosecondsPerMillisecond
        } else if lower.hasSuffix("s") {
            number = lower.dropLast()
            unit = nanosecondsPerSecond
        } else {
            number = Substring(lower)
            unit = nanosecondsPerSecond
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, let wholeValue = decimal(whole) else { return nil }
        var fractionNanoseconds: UInt64 = 0
        if parts.count == 2 {
            // A fraction needs digits on both sides of the dot: "1." and ".5" are typos more often than not.
            guard !parts[1].isEmpty, decimal(parts[1]) != nil else { return nil }
            // Scale the fraction digits by hand to stay exact: 0.25 s is 250_000_000 ns, not a rounded double.
            var scale = unit / 10
            for scalar in parts[1].unicodeScalars where scale > 0 {
                fractionNanoseconds += UInt64(scalar.value - 0x30) * scale
                scale /= 10
            }
        }
        let (wholeNanoseconds, overflow1) = wholeValue.multipliedReportingOverflow(by: unit)
        let (total, overflow2) = wholeNanoseconds.addingReportingOverflow(fractionNanoseconds)
        return overflow1 || overflow2 ? nil : total
    }

    /// Formats a duration in a canonical form that `parse` reads back to the same value.
    ///
    /// - Parameters:
    ///   - duration: a non-negative duration.
    /// - Returns: whole seconds as `2s`, whole milliseconds as `250ms`, anything finer as
    ///   fractional seconds (`0.0000015s`).
    package static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = UInt64(max(0, seconds)) * nanosecondsPerSecond + UInt64(max(0, attoseconds) / 1_000_000_000)
        if nanoseconds % nanosecondsPerSecond == 0 {
            return "\(nanoseconds / nanosecondsPerSecond)s"
        }
        if nanoseconds % nanosecondsPerMillisecond == 0 {
            return "\(nanoseconds / nanosecondsPerMillisecond)ms"
        }
        var fraction = String(nanoseconds % nanosecondsPerSecond)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(nanoseconds / nanosecondsPerSecond).\(fraction)s"
    }

    /// Parses a run of ASCII digits; `nil` when empty, non-digit or overflowing.
    private static func decimal(_ text: Substring) -> UInt64? {
        guard !text.isEmpty else { return nil }
        var value: UInt64 = 0
        for scalar in text.unicodeScalars {
            guard scalar.value >= 0x30, scalar.value <= 0x39 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(scalar.value - 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
