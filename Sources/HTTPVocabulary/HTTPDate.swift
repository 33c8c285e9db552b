/// A timestamp as carried by HTTP fields such as `Last-Modified` and `If-Modified-Since` (RFC 9110 §5.6.7).
///
/// HTTP dates have whole-second resolution and are always UTC, so a signed count of seconds is the whole state.
/// Conversion uses proleptic Gregorian calendar arithmetic and needs neither Foundation nor time zone data.
public struct HTTPDate: Hashable, Comparable, Sendable {
    /// Seconds since 1970-01-01T00:00:00Z, ignoring leap seconds.
    public var secondsSince1970: Int64

    /// Creates a date from a Unix timestamp.
    ///
    /// - Parameter secondsSince1970: Seconds since 1970-01-01T00:00:00Z.
    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    /// Parses any of the three formats a recipient must accept, ignoring surrounding whitespace.
    ///
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`; two-digit years 00-69 mean 2000-2069 and 70-99 mean 1970-1999,
    ///   a fixed reading of RFC 9110's "more than 50 years in the future" rule that keeps parsing independent of the
    ///   clock.
    /// - asctime: `Sun Nov  6 08:49:37 1994`
    ///
    /// Names are matched case-sensitively, as the grammar spells them. The day name must be a real one but is not
    /// checked against the date, since senders get it wrong and it carries no information. A second of 60 is accepted
    /// for leap seconds and lands on the first second of the next minute.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: `nil` when the text matches none of the formats or names an impossible date or time.
    public init?(parsing value: String) {
        var scanner = DateScanner(value)
        guard let seconds = scanner.parse() else { return nil }
        self.secondsSince1970 = seconds
    }

    /// The date formatted as an IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    ///
    /// Years outside 0...9999 cannot be expressed in that format; they are printed with as many digits as needed.
    public var headerValue: String {
        let (days, secondOfDay) = floorDivide(secondsSince1970, 86_400)
        let (year, month, day) = civilFromDays(days)
        let weekday = Int(floorDivide(days + 4, 7).remainder)  // 1970-01-01 was a Thursday.
        return "\(dayNames[weekday]), \(pad(day, 2)) \(monthNames[month - 1]) \(pad(year, 4)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)) GMT"
    }

    /// Orders dates chronologically.
    public static func < (lhs: HTTPDate, rhs: HTTPDate) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }
}

private let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
private let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
private let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

/// A cursor over the bytes of a date field; each `parse` step either consumes exactly its token or fails.
private struct DateScanner {
    let bytes: [UInt8]
    var index = 0
    var end: Int

    init(_ value: String) {
        bytes = Array(value.utf8)
        end = bytes.count
        while index < end, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        while end > index, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
    }

    mutating func parse() -> Int64? {
        // The formats differ right after the day name: ", " with a short name, ", " with a long name, or " ".
        let nameStart = index
        while index < end, isLetter(bytes[index]) { index += 1 }
        let name = Array(bytes[nameStart..<index])
        if name.count == 3, dayNames.contains(where: { Array($0.utf8) == name }), consume(", ") {
            return parseIMFFixdateRest()
        }
        if name.count > 3, longDayNames.contains(where: { Array($0.utf8) == name }), consume(", ") {
            return parseRFC850Rest()
        }
        if name.count == 3, dayNames.contains(where: { Array($0.utf8) == name }), consume(" ") {
            return parseAsctimeRest()
        }
        return nil
    }

    /// `DD Mon YYYY HH:MM:SS GMT`
    private mutating func parseIMFFixdateRest() -> Int64? {
        guard let day = digits(2), consume(" "), let month = monthName(), consume(" "), let year = digits(4),
            consume(" "), let time = timeOfDay(), consume(" GMT"), index == end
        else { return nil }
        return timestamp(year: year, month: month, day: day, time: time)
    }

    /// `DD-Mon-YY HH:MM:SS GMT`
    private mutating func parseRFC850Rest() -> Int64? {
        guard let day = digits(2), consume("-"), let month = monthName(), consume("-"), let shortYear = digits(2),
            consume(" "), let time = timeOfDay(), consume(" GMT"), index == end
        else { return nil }
        let year = shortYear < 70 ? 2000 + shortYear : 1900 + shortYear
        return timestamp(year: year, month: month, day: day, time: time)
    }

    /// `Mon DD HH:MM:SS YYYY` where the day is two digits or a space and one digit.
    private mutating func parseAsctimeRest() -> Int64? {
        guard let month = monthName(), consume(" ") else { return nil }
        let day: Int
        if consume(" ") {
            guard let digit = digits(1) else { return nil }
            day = digit
        } else {
            guard let twoDigits = digits(2) else { return nil }
            day = twoDigits
        }
        guard consume(" "), let time = timeOfDay(), consume(" "), let year = digits(4), index == end else {
            return nil
        }
        return timestamp(year: year, month: month, day: day, time: time)
    }

    private mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
        guard let hour = digits(2), consume(":"), let minute = digits(2), consume(":"), let second = digits(2) else {
            return nil
        }
        return (hour, minute, second)
    }

    /// Returns the month number 1...12.
    private mutating func monthName() -> Int? {
        guard end - index >= 3 else { return nil }
        let name = Array(bytes[index..<index + 3])
        guard let month = monthNames.firstIndex(where: { Array($0.utf8) == name }) else { return nil }
        index += 3
        return month + 1
    }

    private mutating func digits(_ count: Int) -> Int? {
        guard end - index >= count else { return nil }
        var value = 0
        for byte in bytes[index..<index + count] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        index += count
        return value
    }

    private mutating func consume(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard end - index >= count else { return false }
        let matches = literal.withUTF8Buffer { expected in
            expected.indices.allSatisfy { bytes[index + $0] == expected[$0] }
        }
        if matches { index += count }
        return matches
    }

    private func timestamp(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Int64? {
        guard day >= 1, day <= daysInMonth(year: year, month: month), time.hour <= 23, time.minute <= 59,
            time.second <= 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return days * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + time.second)
    }
}

private func isLetter(_ byte: UInt8) -> Bool {
    (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
}

private func daysInMonth(year: Int, month: Int) -> Int {
    switch month {
    case 2:
        let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return isLeap ? 29 : 28
    case 4, 6, 9, 11:
        return 30
    default:
        return 31
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date, after Howard Hinnant's `days_from_civil`.
///
/// Shifting the year to start in March puts the leap day last, so the day of the year follows from the month by one
/// linear formula; whole 400-year eras of 146,097 days then handle the century rules.
private func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
    let marchYear = Int64(month <= 2 ? year - 1 : year)
    let era = floorDivide(marchYear, 400).quotient
    let yearOfEra = marchYear - era * 400  // 0...399
    let monthFromMarch = Int64(month > 2 ? month - 3 : month + 9)  // 0...11
    let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1  // 0...365
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear  // 0...146096
    return era * 146_097 + dayOfEra - 719_468  // 719,468 days from 0000-03-01 to 1970-01-01.
}

/// The inverse of ``daysFromCivil(year:month:day:)``: the proleptic Gregorian date of a day count since 1970-01-01.
private func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
    let shifted = days + 719_468
    let era = floorDivide(shifted, 146_097).quotient
    let dayOfEra = shifted - era * 146_097  // 0...146096
    // Undo the leap-day corrections (every 4th, not 100th, but 400th year) to find the year within the era.
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365
    let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
    let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
    let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    return (Int(year), Int(month), Int(day))
}

/// Division rounding toward negative infinity, so dates before 1970 fall on the right day.
private func floorDivide(_ dividend: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
    let (quotient, remainder) = dividend.quotientAndRemainder(dividingBy: divisor)
    return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
}

private func pad(_ value: some BinaryInteger, _ width: Int) -> String {
    let digits = String(value.magnitude)
    let padded = digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    return value < 0 ? "-" + padded : padded
}
