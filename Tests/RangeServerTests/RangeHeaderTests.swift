import RangeServer
import Testing

@Suite("Range header parsing")
struct RangeHeaderParsingTests {
    @Test(
        "valid headers parse to the specs in order",
        arguments: [
            ("bytes=0-499", [ByteRangeSpec.closed(first: 0, last: 499)]),
            ("bytes=500-", [.from(first: 500)]),
            ("bytes=-500", [.suffix(length: 500)]),
            ("bytes=0-0,-1", [.closed(first: 0, last: 0), .suffix(length: 1)]),
            ("BYTES=1-2", [.closed(first: 1, last: 2)]),
            ("Bytes=1-2", [.closed(first: 1, last: 2)]),
            ("bytes=5-5", [.closed(first: 5, last: 5)]),
            ("bytes=0-1,,2-3", [.closed(first: 0, last: 1), .closed(first: 2, last: 3)]),
            ("bytes=0-1 , 2-3", [.closed(first: 0, last: 1), .closed(first: 2, last: 3)]),
            ("bytes=0-1,\t2-3", [.closed(first: 0, last: 1), .closed(first: 2, last: 3)]),
            ("bytes=,0-1", [.closed(first: 0, last: 1)]),
            ("bytes=0-1,", [.closed(first: 0, last: 1)]),
            ("bytes=, , 0-1 ,, ,", [.closed(first: 0, last: 1)]),
            ("  bytes=0-1  ", [.closed(first: 0, last: 1)]),
            ("bytes=-0", [.suffix(length: 0)]),
            ("bytes=007-008", [.closed(first: 7, last: 8)]),
            ("bytes=0-1,0-1", [.closed(first: 0, last: 1), .closed(first: 0, last: 1)]),
            ("bytes=18446744073709551615-", [.from(first: UInt64.max)]),
            ("bytes=0-18446744073709551615", [.closed(first: 0, last: UInt64.max)]),
        ])
    func parsesValid(value: String, expected: [ByteRangeSpec]) {
        #expect(RangeHeader.parse(value)?.specs == expected)
    }

    @Test(
        "invalid headers and other units give nil",
        arguments: [
            "", "bytes", "bytes=", "bytes=,", "bytes= ,, ", "items=0-1", "byte=0-1", "bytesx=0-1", "bytes 0-1",
            "bytes =0-1", "bytes= 0-1", "bytes=0 -1", "bytes=0- 1", "bytes=+0-1", "bytes=-+1", "bytes=0--1",
            "bytes=5-4", "bytes=a-b", "bytes=0-1;2-3", "bytes=0-1 2-3", "bytes=-", "bytes=--1", "bytes=1-2-3",
            "bytes=0x10-0x20", "bytes=0-1,x", "bytes=18446744073709551616-", "bytes=0-18446744073709551616",
            "bytes=-18446744073709551616", "bytes=99999999999999999999999-", "bytes=1.5-2", "bytes=０-1",
        ])
    func rejectsInvalid(value: String) {
        #expect(RangeHeader.parse(value) == nil)
    }

    @Test("10,000 specs parse completely")
    func manySpecsParseLinearly() {
        let value = "bytes=" + Array(repeating: "0-", count: 10_000).joined(separator: ",")
        let parsed = RangeHeader.parse(value)
        #expect(parsed?.specs.count == 10_000)
        #expect(parsed?.specs.allSatisfy { $0 == .from(first: 0) } == true)
    }

    @Test("a megabyte of digits is rejected as overflow")
    func hugeNumberRejectedQuickly() {
        let value = "bytes=" + String(repeating: "9", count: 1_000_000) + "-"
        let parsed = RangeHeader.parse(value)
        #expect(parsed == nil)
    }

    @Test("a megabyte of commas is rejected")
    func hugeEmptyListRejectedQuickly() {
        let value = "bytes=" + String(repeating: ", ", count: 500_000)
        let parsed = RangeHeader.parse(value)
        #expect(parsed == nil)
    }
}

@Suite("Range evaluation")
struct RangeEvaluationTests {
    private func evaluate(_ value: String, length: UInt64, maxRanges: Int = 64) -> RangeEvaluation? {
        RangeHeader.parse(value)?.evaluate(length: length, maxRanges: maxRanges)
    }

    @Test(
        "single specs resolve against the length",
        arguments: [
            ("bytes=0-499", 10_000, 0...499),
            ("bytes=500-999", 10_000, 500...999),
            ("bytes=9500-", 10_000, 9500...9999),
            ("bytes=-500", 10_000, 9500...9999),
            ("bytes=0-0", 10_000, 0...0),
            ("bytes=-1", 10_000, 9999...9999),
            ("bytes=9999-", 10_000, 9999...9999),
            ("bytes=0-99999", 10_000, 0...9999),
            ("bytes=5000-99999", 10_000, 5000...9999),
            ("bytes=-20000", 10_000, 0...9999),
            ("bytes=-1", 1, 0...0),
            ("bytes=0-", 1, 0...0),
        ] as [(String, UInt64, ClosedRange<UInt64>)])
    func resolvesSingle(value: String, length: UInt64, expected: ClosedRange<UInt64>) {
        #expect(evaluate(value, length: length) == .satisfiable([expected]))
    }

    @Test(
        "specs selecting nothing are unsatisfiable",
        arguments: [
            ("bytes=10000-", 10_000), ("bytes=10000-10001", 10_000), ("bytes=-0", 10_000), ("bytes=0-", 0),
            ("bytes=-1", 0), ("bytes=0-0", 0), ("bytes=-0,20000-", 10_000), ("bytes=18446744073709551615-", 10),
        ] as [(String, UInt64)])
    func unsatisfiable(value: String, length: UInt64) {
        #expect(evaluate(value, length: length) == .unsatisfiable)
    }

    @Test("unsatisfiable specs are dropped next to satisfiable ones")
    func dropsUnsatisfiable() {
        #expect(evaluate("bytes=500-,0-9,-0", length: 100) == .satisfiable([0...9]))
        #expect(evaluate("bytes=-0,90-", length: 100) == .satisfiable([90...99]))
    }

    @Test("the maxRanges boundary is inclusive")
    func maxRangesBoundary() {
        let header = RangeHeader(specs: (0..<8).map { .closed(first: UInt64($0) * 10, last: UInt64($0) * 10 + 1) })
        guard case .satisfiable(let ranges) = header.evaluate(length: 1000, maxRanges: 8) else {
            Issue.record("expected satisfiable at the limit")
            return
        }
        #expect(ranges.count == 8)
        #expect(header.evaluate(length: 1000, maxRanges: 7) == .ignore)
        #expect(header.evaluate(length: 1000, maxRanges: 0) == .ignore)
        // The count limit applies before anything else, even to specs that would be unsatisfiable.
        #expect(
            RangeHeader(specs: [.from(first: 5000), .from(first: 6000)]).evaluate(length: 10, maxRanges: 1) == .ignore)
    }

    @Test("10,000 copies of 0- are ignored, by count and by size")
    func amplificationIgnored() throws {
        let header = try #require(
            RangeHeader.parse("bytes=" + Array(repeating: "0-", count: 10_000).joined(separator: ",")))
        #expect(header.evaluate(length: 1_000_000, maxRanges: 64) == .ignore)
        #expect(header.evaluate(length: 1_000_000, maxRanges: .max) == .ignore)
    }

    @Test("overlap beyond the length is ignored, overlap within it is merged")
    func overlapAccounting() {
        #expect(evaluate("bytes=0-59,40-99", length: 100) == .ignore)
        #expect(evaluate("bytes=0-49,40-89", length: 100) == .satisfiable([0...89]))
        #expect(evaluate("bytes=0-49,50-99", length: 100) == .satisfiable([0...99]))
        #expect(evaluate("bytes=0-,0-", length: 100) == .ignore)
        #expect(evaluate("bytes=-60,-60", length: 100) == .ignore)
        // Clipping happens before summing: 0-999999 counts as 100 bytes.
        #expect(evaluate("bytes=0-999999", length: 100) == .satisfiable([0...99]))
    }

    @Test("sums that overflow UInt64 are ignored rather than trapping")
    func sumOverflow() {
        let length = UInt64.max
        let header = RangeHeader(specs: [.from(first: 0), .from(first: 0)])
        #expect(header.evaluate(length: length, maxRanges: 64) == .ignore)
        #expect(
            RangeHeader(specs: [.from(first: 0)]).evaluate(length: length, maxRanges: 64)
                == .satisfiable([0...(UInt64.max - 1)]))
    }

    @Test(
        "merging keeps the position of the earliest member",
        arguments: [
            ("bytes=0-9,10-19", [0...19]),
            ("bytes=10-19,0-9", [0...19]),
            ("bytes=0-9,11-19", [0...9, 11...19]),
            ("bytes=50-59,0-9,20-29", [50...59, 0...9, 20...29]),
            ("bytes=50-59,0-9,55-64", [50...64, 0...9]),
            ("bytes=80-89,0-9,30-39,10-19", [80...89, 0...19, 30...39]),
            ("bytes=30-39,0-9,20-29,10-19", [0...39]),
            ("bytes=40-49,0-4,20-29,5-9,25-34", [40...49, 0...9, 20...34]),
            ("bytes=-10,0-9", [90...99, 0...9]),
            ("bytes=5-5,5-5", [5...5]),
            ("bytes=0-0,2-2,1-1", [0...2]),
        ] as [(String, [ClosedRange<UInt64>])])
    func mergesInRequestOrder(value: String, expected: [ClosedRange<UInt64>]) {
        #expect(evaluate(value, length: 100) == .satisfiable(expected))
    }

    @Test("1 TiB lengths and offsets past 2^32 stay exact")
    func largeLengths() {
        let tebibyte: UInt64 = 1 << 40
        #expect(
            evaluate("bytes=4294967296-4294967305", length: tebibyte) == .satisfiable([4_294_967_296...4_294_967_305]))
        #expect(evaluate("bytes=-1", length: tebibyte) == .satisfiable([(tebibyte - 1)...(tebibyte - 1)]))
        #expect(evaluate("bytes=1099511627775-", length: tebibyte) == .satisfiable([(tebibyte - 1)...(tebibyte - 1)]))
        #expect(evaluate("bytes=1099511627776-", length: tebibyte) == .unsatisfiable)
        #expect(evaluate("bytes=0-", length: tebibyte) == .satisfiable([0...(tebibyte - 1)]))
        #expect(evaluate("bytes=0-4294967295,4294967296-", length: tebibyte) == .satisfiable([0...(tebibyte - 1)]))
        #expect(evaluate("bytes=0-,-1", length: tebibyte) == .ignore)
    }

    @Test("thousands of disjoint ranges evaluate in order (speed is measured by RangeBench)")
    func manyDisjointRanges() {
        // Descending request order makes a naive insertion-based merge quadratic.
        let count = 10_000
        let specs = (0..<count).reversed().map { ByteRangeSpec.closed(first: UInt64($0) * 4, last: UInt64($0) * 4 + 1) }
        let header = RangeHeader(specs: specs)
        let result = header.evaluate(length: UInt64(count) * 4, maxRanges: .max)
        guard case .satisfiable(let ranges) = result else {
            Issue.record("expected satisfiable, got \(result)")
            return
        }
        #expect(ranges.count == count)
        #expect(ranges.first == UInt64(count - 1) * 4...UInt64(count - 1) * 4 + 1)
        #expect(ranges.last == 0...1)
    }

    @Test("resolved(length:) covers each spec kind")
    func resolvedSpecs() {
        #expect(ByteRangeSpec.closed(first: 2, last: 5).resolved(length: 4) == 2...3)
        #expect(ByteRangeSpec.from(first: 4).resolved(length: 4) == nil)
        #expect(ByteRangeSpec.suffix(length: 9).resolved(length: 4) == 0...3)
        #expect(ByteRangeSpec.suffix(length: 0).resolved(length: 4) == nil)
        #expect(ByteRangeSpec.suffix(length: 1).resolved(length: 0) == nil)
    }
}

@Suite("Range evaluation against a naive model")
struct RangeEvaluationPropertyTests {
    /// SplitMix64: deterministic, so a failure names a case that reproduces.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
    }

    private static func randomSpec(length: UInt64, using generator: inout SeededGenerator) -> ByteRangeSpec {
        // Positions may run past the end so unsatisfiable and clipped specs occur too.
        let limit = length + 4
        let first = UInt64.random(in: 0...limit, using: &generator)
        switch Int.random(in: 0..<4, using: &generator) {
        case 0:
            return .from(first: first)
        case 1:
            return .suffix(length: UInt64.random(in: 0...max(1, limit / 3), using: &generator))
        default:
            let span = UInt64.random(in: 0...max(1, limit / 4), using: &generator)
            return .closed(first: first, last: first + span)
        }
    }

    /// The naive model: mark bytes in a Bool array, one spec at a time.
    private static func coveredBytes(of spec: ByteRangeSpec, length: Int) -> [Int] {
        var covered: [Int] = []
        for position in 0..<length {
            let selected: Bool
            switch spec {
            case .closed(let first, let last):
                selected = UInt64(position) >= first && UInt64(position) <= last
            case .from(let first):
                selected = UInt64(position) >= first
            case .suffix(let suffixLength):
                selected = UInt64(length - position) <= suffixLength
            }
            if selected { covered.append(position) }
        }
        return covered
    }

    @Test("500 seeded cases agree with a byte-marking model")
    func agreesWithModel() {
        var generator = SeededGenerator(state: 0x5EED_1234)
        var outcomes: [String: Int] = [:]
        for caseNumber in 0..<500 {
            let length = UInt64.random(in: 0...120, using: &generator)
            let specCount = Int.random(in: 1...8, using: &generator)
            let specs = (0..<specCount).map { _ in Self.randomSpec(length: length, using: &generator) }
            let result = RangeHeader(specs: specs).evaluate(length: length, maxRanges: 64)

            let perSpec = specs.map { Self.coveredBytes(of: $0, length: Int(length)) }
            var marked = [Bool](repeating: false, count: Int(length))
            for position in perSpec.joined() { marked[position] = true }
            let requestedBytes = perSpec.reduce(0) { $0 + $1.count }
            let context = "case \(caseNumber): length \(length), specs \(specs)"

            switch result {
            case .unsatisfiable:
                outcomes["unsatisfiable", default: 0] += 1
                #expect(requestedBytes == 0, "\(context)")
            case .ignore:
                outcomes["ignore", default: 0] += 1
                #expect(requestedBytes > Int(length), "\(context)")
            case .satisfiable(let ranges):
                outcomes["satisfiable", default: 0] += 1
                #expect(requestedBytes > 0 && requestedBytes <= Int(length), "\(context)")
                var produced = [Bool](repeating: false, count: Int(length))
                for range in ranges {
                    for position in range {
                        #expect(!produced[Int(position)], "\(context): byte \(position) served twice")
                        produced[Int(position)] = true
                    }
                }
                #expect(produced == marked, "\(context): covered set differs")
                // Merged means neither overlapping nor touching.
                let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
                for (left, right) in zip(sorted, sorted.dropFirst()) {
                    #expect(left.upperBound + 1 < right.lowerBound, "\(context): \(left) and \(right) not merged")
                }
                // Each range appears where the earliest spec contributing to it was requested.
                let firstRequested = ranges.map { range in
                    perSpec.firstIndex { bytes in bytes.contains { range.contains(UInt64($0)) } } ?? -1
                }
                #expect(!firstRequested.contains(-1), "\(context)")
                #expect(firstRequested == firstRequested.sorted(), "\(context): order \(firstRequested)")
            }
        }
        // The generator must exercise every outcome, or the comparison proves little.
        #expect(outcomes["unsatisfiable", default: 0] > 10)
        #expect(outcomes["ignore", default: 0] > 10)
        #expect(outcomes["satisfiable", default: 0] > 100)
    }
}
