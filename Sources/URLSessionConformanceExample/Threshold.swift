import Foundation

/// Where a step happens: `25%` of the file's length, or a size such as `1M` (binary units, as the scenarios write).
struct Threshold: Sendable {
    let text: String

    init(_ text: String) { self.text = text.trimmingCharacters(in: .whitespaces) }

    /// Whether `onDisk` bytes reach the threshold; a percentage is never reached before the length is known.
    func isReached(onDisk: Int64, length: Int64?) -> Bool {
        if text.hasSuffix("%") {
            guard let length, let percent = Double(text.dropLast()) else { return false }
            return Double(onDisk) >= Double(length) * percent / 100
        }
        let units: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024]
        let unit = text.last.flatMap { units[Character($0.uppercased())] }
        guard let number = Double(unit == nil ? Substring(text) : text.dropLast()) else { return false }
        return Double(onDisk) >= number * (unit ?? 1)
    }

    /// `2s`, `500ms` or a bare number of seconds; one second when it cannot be read.
    static func seconds(_ text: String) -> Double {
        if text.hasSuffix("ms") { return (Double(text.dropLast(2)) ?? 1000) / 1000 }
        return Double(text.hasSuffix("s") ? text.dropLast() : Substring(text)) ?? 1
    }
}
