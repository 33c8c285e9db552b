/// Fuzzes `RangeHeader.parse` and `RangeHeader.evaluate(length:maxRanges:)`.
///
/// Invariants: parsed specs are well formed and survive a print/parse round trip; evaluated ranges lie
/// within the length, are disjoint and non-adjacent, cover exactly the bytes the specs select, keep the
/// request order of their earliest member, and the outcome kind follows the documented rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func rangeHeaderFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = fuzzText(start, count)
    guard let header = RangeHeader.parse(text) else { return 0 }
    fuzzCheck(!header.specs.isEmpty, "a parsed header has specs")

    // Printing the specs canonically and parsing again gives the same specs.
    let printed = "bytes=" + header.specs.map(rangeSpecText).joined(separator: ",")
    fuzzCheck(RangeHeader.parse(printed) == header, "round trip of \(printed)")

    for length in interestingLengths(header.specs) {
        for maxRanges in [1, 64, header.specs.count] {
            checkEvaluation(header, length: length, maxRanges: maxRanges)
        }
    }
    return 0
}

private func rangeSpecText(_ spec: ByteRangeSpec) -> String {
    switch spec {
    case .closed(let first, let last):
        fuzzCheck(first <= last, "closed spec \(first)-\(last) is ordered")
        return "\(first)-\(last)"
    case .from(let first): return "\(first)-"
    case .suffix(let length): return "-\(length)"
    }
}

/// Lengths at the edges of the specs' own numbers, plus a few fixed ones; bounded so a big header stays cheap.
private func interestingLengths(_ specs: [ByteRangeSpec]) -> Set<UInt64> {
    var lengths: Set<UInt64> = [0, 1, 2, 100, UInt64.max]
    for spec in specs.prefix(8) {
        let numbers: [UInt64]
        switch spec {
        case .closed(let first, let last): numbers = [first, last]
        case .from(let first): numbers = [first]
        case .suffix(let length): numbers = [length]
        }
        for number in numbers {
            lengths.insert(number)
            lengths.insert(number &+ 1)
            if number > 0 { lengths.insert(number - 1) }
        }
    }
    return lengths
}

private func checkEvaluation(_ header: RangeHeader, length: UInt64, maxRanges: Int) {
    let evaluation = header.evaluate(length: length, maxRanges: maxRanges)
    let resolved = header.specs.map { $0.resolved(length: length) }
    for range in resolved.compactMap({ $0 }) {
        fuzzCheck(range.upperBound < length, "resolved \(range) within \(length)")
    }
    var requested: UInt64 = 0
    var overflowed = false
    for range in resolved.compactMap({ $0 }) {
        let (sum, overflow) = requested.addingReportingOverflow(range.upperBound - range.lowerBound + 1)
        overflowed = overflowed || overflow
        requested = sum
    }
    let tooMany = header.specs.count > maxRanges
    let tooLarge = overflowed || requested > length

    switch evaluation {
    case .ignore:
        fuzzCheck(tooMany || tooLarge, "ignore only for too many specs or too many bytes (length \(length))")
    case .unsatisfiable:
        fuzzCheck(!tooMany && resolved.allSatisfy { $0 == nil }, "unsatisfiable only when no spec selects a byte")
    case .satisfiable(let ranges):
        fuzzCheck(!tooMany && !tooLarge, "satisfiable within the limits")
        fuzzCheck(!ranges.isEmpty, "satisfiable is never empty")
        for range in ranges { fuzzCheck(range.upperBound < length, "\(range) within \(length)") }
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            fuzzCheck(a.upperBound + 1 < b.lowerBound, "\(a) and \(b) are disjoint and not adjacent")
        }
        // Every requested byte range lies inside one served range, and every served range starts at a
        // requested start (so nothing unrequested is served).
        let requestedRanges = resolved.compactMap { $0 }
        for range in requestedRanges {
            fuzzCheck(
                ranges.contains { $0.contains(range.lowerBound) && $0.contains(range.upperBound) }, "\(range) served")
        }
        for range in ranges {
            fuzzCheck(requestedRanges.contains { $0.lowerBound == range.lowerBound }, "\(range) starts a request")
            fuzzCheck(requestedRanges.contains { $0.upperBound == range.upperBound }, "\(range) ends a request")
        }
        // Order: by the earliest spec that falls into each served range.
        let firstIndices = ranges.map { served in
            resolved.firstIndex { $0.map { served.contains($0.lowerBound) } ?? false } ?? Int.max
        }
        fuzzCheck(firstIndices == firstIndices.sorted(), "served in request order: \(firstIndices)")
    }
}
