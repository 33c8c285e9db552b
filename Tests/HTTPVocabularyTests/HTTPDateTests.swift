import HTTPVocabulary
import Testing

@Suite("HTTP dates")
struct HTTPDateTests {
    /// Reference values from `date -u`, chosen around leap years, century rules, 1970 and 2038.
    static let knownDates: [(seconds: Int64, imf: String)] = [
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (2_147_483_648, "Tue, 19 Jan 2038 03:14:08 GMT"),
        (-2_203_891_200, "Thu, 01 Mar 1900 00:00:00 GMT"),
        (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT"),
        (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
        (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT"),
        (1_709_210_096, "Thu, 29 Feb 2024 12:34:56 GMT"),
        (-11_670_998_400, "Tue, 29 Feb 1600 00:00:00 GMT"),
    ]

    @Test("IMF-fixdate formats and parses known instants", arguments: knownDates)
    func imfFixdate(seconds: Int64, imf: String) {
        #expect(HTTPDate(secondsSince1970: seconds).headerValue == imf)
        #expect(HTTPDate(parsing: imf)?.secondsSince1970 == seconds)
    }

    @Test(
        "the three formats of RFC 9110 parse to the same instant",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun Nov 06 08:49:37 1994",
            "  Sun, 06 Nov 1994 08:49:37 GMT\t",
        ])
    func threeFormats(value: String) {
        let date = HTTPDate(parsing: value)
        #expect(date?.secondsSince1970 == 784_111_777)
        #expect(date?.headerValue == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test(
        "RFC 850 two-digit years split at 70",
        arguments: [
            ("Thursday, 01-Jan-70 00:00:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT"),
            ("Friday, 31-Dec-99 23:59:59 GMT", "Fri, 31 Dec 1999 23:59:59 GMT"),
            ("Saturday, 01-Jan-00 00:00:00 GMT", "Sat, 01 Jan 2000 00:00:00 GMT"),
            ("Thursday, 29-Feb-24 12:34:56 GMT", "Thu, 29 Feb 2024 12:34:56 GMT"),
            ("Tuesday, 31-Dec-69 00:00:00 GMT", "Tue, 31 Dec 2069 00:00:00 GMT"),
        ])
    func rfc850Years(value: String, imf: String) {
        #expect(HTTPDate(parsing: value)?.headerValue == imf)
    }

    @Test("asctime single-digit and two-digit days")
    func asctimeDays() {
        #expect(HTTPDate(parsing: "Thu Jan  1 00:00:00 1970")?.secondsSince1970 == 0)
        #expect(HTTPDate(parsing: "Thu Feb 29 12:34:56 2024")?.secondsSince1970 == 1_709_210_096)
        #expect(HTTPDate(parsing: "Thu Jan 1 00:00:00 1970") == nil)
    }

    @Test("every format round-trips for instants across four centuries")
    func roundTripsAllFormats() throws {
        let longDayNames = [
            "Sun": "Sunday", "Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday", "Fri": "Friday",
            "Sat": "Saturday",
        ]
        // An odd step visits every time of day, day of month and leap-year position over the run.
        var seconds: Int64 = -2_208_988_800  // 1900-01-01
        var checked = 0
        while seconds < 4_102_444_800 {  // 2100-01-01
            let date = HTTPDate(secondsSince1970: seconds)
            let imf = date.headerValue
            #expect(HTTPDate(parsing: imf) == date, "\(imf)")

            // Rebuild the other two formats from the IMF-fixdate fields: "Www, DD Mmm YYYY HH:MM:SS GMT".
            let fields = imf.split(separator: " ").map(String.init)
            let dayName = String(fields[0].dropLast())
            let (day, month, year, time) = (fields[1], fields[2], fields[3], fields[4])
            let asctimeDay = day.hasPrefix("0") ? " " + day.dropFirst() : day
            let asctime = "\(dayName) \(month) \(asctimeDay) \(time) \(year)"
            #expect(HTTPDate(parsing: asctime) == date, "\(asctime)")
            let yearNumber = try #require(Int(year))
            if (1970...2069).contains(yearNumber) {
                let rfc850 = "\(longDayNames[dayName]!), \(day)-\(month)-\(year.suffix(2)) \(time) GMT"
                #expect(HTTPDate(parsing: rfc850) == date, "\(rfc850)")
            }
            seconds += 86_400 * 11 + 3_607
            checked += 1
        }
        #expect(checked > 6_000)
    }

    @Test(
        "impossible dates and malformed text give nil",
        arguments: [
            "", "Sun, 30 Feb 1994 08:49:37 GMT", "Tue, 29 Feb 2100 00:00:00 GMT", "Fri, 31 Apr 2020 00:00:00 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 32 Oct 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT x", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT", "sun, 06 Nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun,06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT", "Sunday, 06 Nov 94 08:49:37 GMT", "Sunday, 31-Jun-94 08:49:37 GMT",
            "Sundae, 06-Nov-94 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 94",
            "Sun Nov  6 24:49:37 1994", "Sun Feb 30 08:49:37 1994", "Sun Nov  6 08:49:37 1994 GMT",
            "Sunday Nov  6 08:49:37 1994", "784111777", "Sun, +6 Nov 1994 08:49:37 GMT",
        ])
    func rejectsInvalid(value: String) {
        #expect(HTTPDate(parsing: value) == nil)
    }

    @Test("leap years follow the Gregorian century rules")
    func leapYears() {
        #expect(HTTPDate(parsing: "Tue, 29 Feb 2000 00:00:00 GMT") != nil)
        #expect(HTTPDate(parsing: "Thu, 29 Feb 2024 00:00:00 GMT") != nil)
        #expect(HTTPDate(parsing: "Thu, 29 Feb 1900 00:00:00 GMT") == nil)
        #expect(HTTPDate(parsing: "Wed, 29 Feb 2023 00:00:00 GMT") == nil)
    }

    @Test("a leap second is accepted and lands on the next minute")
    func leapSecond() {
        let leap = HTTPDate(parsing: "Sat, 31 Dec 2016 23:59:60 GMT")
        #expect(leap == HTTPDate(parsing: "Sun, 01 Jan 2017 00:00:00 GMT"))
        #expect(leap?.headerValue == "Sun, 01 Jan 2017 00:00:00 GMT")
    }

    @Test("the day name is checked for spelling, not for agreement with the date")
    func dayNameNotCrossChecked() {
        #expect(HTTPDate(parsing: "Mon, 06 Nov 1994 08:49:37 GMT")?.secondsSince1970 == 784_111_777)
    }

    @Test("year 0000 parses, and extreme timestamps format without trapping")
    func extremes() {
        #expect(HTTPDate(parsing: "Sat, 01 Jan 0000 00:00:00 GMT")?.secondsSince1970 == -62_167_219_200)
        #expect(HTTPDate(secondsSince1970: -62_167_219_201).headerValue == "Fri, 31 Dec -0001 23:59:59 GMT")
        #expect(HTTPDate(secondsSince1970: .max).headerValue.hasSuffix(" GMT"))
        #expect(HTTPDate(secondsSince1970: .min).headerValue.hasSuffix(" GMT"))
    }

    @Test("ordering follows time")
    func ordering() {
        let earlier = HTTPDate(secondsSince1970: 100)
        let later = HTTPDate(secondsSince1970: 101)
        #expect(earlier < later)
        #expect(!(later < earlier))
        #expect(max(earlier, later) == later)
        #expect(HTTPDate(secondsSince1970: -5) < earlier)
    }
}
