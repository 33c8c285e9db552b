import HTTPVocabulary
import PropertyBased
import Testing

@Suite("Content-Range")
struct ContentRangeTests {
    /// Numbers where a digit count changes, and the ends of UInt64.
    static let edges: [UInt64] = [
        0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 4095, 65_535, 1 << 30, UInt64.max - 1, .max,
    ]

    @Test("formatting matches interpolating the three numbers at every digit-count edge")
    func edgeNumbers() {
        for first in Self.edges {
            for last in Self.edges where last >= first {
                for length in Self.edges {
                    #expect(
                        ContentRange.headerValue(first...last, completeLength: length)
                            == "bytes \(first)-\(last)/\(length)")
                }
            }
        }
    }

    @Test("formatting matches interpolating the three numbers for any values")
    func anyNumbers() async {
        await propertyCheck(count: 2000, input: Gen.uint64(), Gen.uint64(), Gen.uint64()) { a, b, length in
            let range = min(a, b)...max(a, b)
            #expect(
                ContentRange.headerValue(range, completeLength: length)
                    == "bytes \(range.lowerBound)-\(range.upperBound)/\(length)")
        }
    }

    @Test("the three forms parse")
    func parsesForms() {
        #expect(ContentRange(parsing: "bytes 0-9/10") == ContentRange(first: 0, last: 9, complete: 10))
        #expect(ContentRange(parsing: "bytes 5-9/*") == ContentRange(first: 5, last: 9, complete: nil))
        #expect(ContentRange(parsing: "bytes */10") == ContentRange(first: nil, last: nil, complete: 10))
        #expect(ContentRange(parsing: " BYTES 0-0/1\t") == ContentRange(first: 0, last: 0, complete: 1))
    }

    @Test(
        "malformed values and other units give nil",
        arguments: [
            "", "bytes", "bytes ", "bytes 0-10/10", "bytes -1-9/10", "bytes 9-5/10", "bytes */*", "bytes 0-9",
            "bytes 0-9/10/11", "items 0-9/10", "bytes 0-/10", "bytes -9/10", "bytes 0-9/1x", "bytes +0-9/10",
            "bytes 0-9/1234567890123456789", "bytes=0-9/10",
        ])
    func rejectsMalformed(value: String) {
        #expect(ContentRange(parsing: value) == nil)
    }

    @Test("the unsatisfied form formats and parses back")
    func unsatisfied() {
        #expect(ContentRange.unsatisfied(completeLength: 42) == "bytes */42")
        #expect(ContentRange(first: nil, last: nil, complete: 42).headerValue == "bytes */42")
        #expect(ContentRange(parsing: ContentRange.unsatisfied(completeLength: 42))?.complete == 42)
    }

    @Test("any satisfied range formats and parses back to itself")
    func roundTrips() async {
        let bound = UInt64(1) << 59
        await propertyCheck(count: 1000, input: Gen.uint64(in: 0...bound), Gen.uint64(in: 0...bound)) { x, y in
            let (a, b) = (Int64(x), Int64(y))
            let value = ContentRange(first: min(a, b), last: max(a, b), complete: max(a, b) + 1)
            #expect(ContentRange(parsing: value.headerValue) == value)
            let unknownLength = ContentRange(first: min(a, b), last: max(a, b), complete: nil)
            #expect(ContentRange(parsing: unknownLength.headerValue) == unknownLength)
        }
    }
}
