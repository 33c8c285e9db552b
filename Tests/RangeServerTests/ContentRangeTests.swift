import PropertyBased
import Testing

@testable import RangeServer

@Suite("Content-Range formatting")
struct ContentRangeTests {
    /// Numbers where a digit count changes, and the ends of UInt64.
    static let edges: [UInt64] = [
        0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 4095, 65_535, 1 << 30, UInt64.max - 1, .max,
    ]

    @Test("matches interpolating the three numbers at every digit-count edge")
    func edgeNumbers() {
        for first in Self.edges {
            for last in Self.edges where last >= first {
                for length in Self.edges {
                    #expect(contentRange(first...last, length: length) == "bytes \(first)-\(last)/\(length)")
                }
            }
        }
    }

    @Test("matches interpolating the three numbers for any values")
    func anyNumbers() async {
        await propertyCheck(count: 2000, input: Gen.uint64(), Gen.uint64(), Gen.uint64()) { a, b, length in
            let range = min(a, b)...max(a, b)
            #expect(
                contentRange(range, length: length) == "bytes \(range.lowerBound)-\(range.upperBound)/\(length)")
        }
    }
}
