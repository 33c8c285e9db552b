import PropertyBased
import RangeServer
import Testing

/// A deliberately simple model of `RangeHeader.evaluate(length:maxRanges:)`, written without looking at the
/// optimised code path: resolve each spec by the RFC's words, refuse floods, then merge by brute force.
private enum ReferenceEvaluator {
    /// RFC 9110 §14.1.2, spelled out case by case.
    static func resolve(_ spec: ByteRangeSpec, length: UInt64) -> ClosedRange<UInt64>? {
        if length == 0 { return nil }
        switch spec {
        case .closed(let first, let last):
            if first >= length { return nil }
            return first...(last < length ? last : length - 1)
        case .from(let first):
            if first >= length { return nil }
            return first...(length - 1)
        case .suffix(let count):
            if count == 0 { return nil }
            return (count >= length ? 0 : length - count)...(length - 1)
        }
    }

    static func evaluate(_ specs: [ByteRangeSpec], length: UInt64, maxRanges: Int) -> RangeEvaluation {
        if specs.count > maxRanges { return .ignore }
        // (range, index of the spec that asked for it)
        var pieces: [(range: ClosedRange<UInt64>, index: Int)] = []
        var total: UInt64 = 0
        for (index, spec) in specs.enumerated() {
            guard let range = resolve(spec, length: length) else { continue }
            // Asking for more bytes in total than the representation has is a flood, answered in full.
            let (sum, overflow) = total.addingReportingOverflow(range.upperBound - range.lowerBound + 1)
            if overflow || sum > length { return .ignore }
            total = sum
            pieces.append((range, index))
        }
        if pieces.isEmpty { return .unsatisfiable }
        // Merge any two pieces that overlap or touch until nothing changes.
        var merged = true
        while merged {
            merged = false
            search: for i in pieces.indices {
                for j in pieces.indices where j > i {
                    let a = pieces[i].range
                    let b = pieces[j].range
                    let touches =
                        a.lowerBound <= b.upperBound && b.lowerBound <= a.upperBound
                        || (a.upperBound < b.lowerBound && b.lowerBound - a.upperBound == 1)
                        || (b.upperBound < a.lowerBound && a.lowerBound - b.upperBound == 1)
                    if touches {
                        let union = min(a.lowerBound, b.lowerBound)...max(a.upperBound, b.upperBound)
                        pieces[i] = (union, min(pieces[i].index, pieces[j].index))
                        pieces.remove(at: j)
                        merged = true
                        break search
                    }
                }
            }
        }
        return .satisfiable(pieces.sorted { $0.index < $1.index }.map(\.range))
    }

    /// For short representations: which bytes are served, computed one byte at a time.
    static func servedBytes(_ specs: [ByteRangeSpec], length: Int) -> [Bool] {
        var served = [Bool](repeating: false, count: length)
        for spec in specs {
            guard let range = resolve(spec, length: UInt64(length)) else { continue }
            for byte in range { served[Int(byte)] = true }
        }
        return served
    }
}

/// Builds a spec from generated raw numbers: kind 0 is `first-last`, 1 is `first-`, 2 is `-length`.
private func makeSpec(kind: Int, _ a: UInt64, _ b: UInt64) -> ByteRangeSpec {
    switch kind {
    case 0: .closed(first: min(a, b), last: max(a, b))
    case 1: .from(first: a)
    default: .suffix(length: a)
    }
}

/// A number near an edge that matters for `length`: 0, the middle, the end, or the top of `UInt64`.
private func nearEdge(_ anchor: Int, _ offset: UInt64, length: UInt64) -> UInt64 {
    switch anchor {
    case 0: offset
    case 1: length / 2 &+ offset
    case 2: length >= offset ? length - offset : 0
    case 3: length &+ offset < length ? UInt64.max : length &+ offset
    default: UInt64.max - offset
    }
}

private func specText(_ spec: ByteRangeSpec) -> String {
    switch spec {
    case .closed(let first, let last): "\(first)-\(last)"
    case .from(let first): "\(first)-"
    case .suffix(let length): "-\(length)"
    }
}

private let smallSpec = zip(Gen.int(in: 0...2), Gen.uint64(in: 0...80), Gen.uint64(in: 0...80))
    .map { makeSpec(kind: $0.0, $0.1, $0.2) }

@Suite("RangeHeader.evaluate against a reference model")
struct RangeEvaluatorPropertyTests {
    @Test("short representations: the same outcome and exactly the requested bytes")
    func shortRepresentations() async {
        await propertyCheck(
            count: 2000, input: Gen.int(in: 0...64), smallSpec.array(of: 1...12), Gen.int(in: 1...16)
        ) { length, specs, maxRanges in
            let actual = RangeHeader(specs: specs).evaluate(length: UInt64(length), maxRanges: maxRanges)
            let expected = ReferenceEvaluator.evaluate(specs, length: UInt64(length), maxRanges: maxRanges)
            #expect(actual == expected, "length \(length), max \(maxRanges), bytes=\(specs.map(specText))")

            guard case .satisfiable(let ranges) = actual else { return }
            var served = [Bool](repeating: false, count: length)
            for range in ranges {
                for byte in range {
                    #expect(!served[Int(byte)], "byte \(byte) served twice")
                    served[Int(byte)] = true
                }
            }
            #expect(served == ReferenceEvaluator.servedBytes(specs, length: length))
        }
    }

    @Test("mostly disjoint specs on short representations: satisfiable ranges match the model")
    func disjointSpecs() async {
        // Spaced starts keep the total under the length often enough to reach the merge logic.
        let spaced = zip(Gen.int(in: 0...7), Gen.uint64(in: 0...3), Gen.bool)
            .map { slot, width, suffix -> ByteRangeSpec in
                suffix ? .suffix(length: width + 1) : .closed(first: UInt64(slot) * 8, last: UInt64(slot) * 8 + width)
            }
        await propertyCheck(count: 1000, input: spaced.array(of: 1...8)) { specs in
            let actual = RangeHeader(specs: specs).evaluate(length: 64, maxRanges: 64)
            #expect(actual == ReferenceEvaluator.evaluate(specs, length: 64, maxRanges: 64), "\(specs.map(specText))")
        }
    }

    @Test("numbers at the edges of UInt64 and of the length")
    func edgeNumbers() async {
        let rawSpec = zip(
            Gen.int(in: 0...2), Gen.int(in: 0...4), Gen.uint64(in: 0...3), Gen.int(in: 0...4), Gen.uint64(in: 0...3))
        let length = Gen.oneOf(
            Gen.uint64(in: 0...3).eraseToAnySequence(),
            Gen.uint64(in: (UInt64.max - 3)...UInt64.max).eraseToAnySequence(),
            Gen.uint64().eraseToAnySequence()
        )
        await propertyCheck(count: 2000, input: length, rawSpec.array(of: 1...6)) { length, raws in
            let specs = raws.map { raw in
                makeSpec(
                    kind: raw.0, nearEdge(raw.1, raw.2, length: length), nearEdge(raw.3, raw.4, length: length))
            }
            let actual = RangeHeader(specs: specs).evaluate(length: length, maxRanges: 64)
            let expected = ReferenceEvaluator.evaluate(specs, length: length, maxRanges: 64)
            #expect(actual == expected, "length \(length), bytes=\(specs.map(specText))")
        }
    }

    @Test("printing specs and parsing them back gives the same header")
    func parseRoundTrip() async {
        let anySpec = zip(Gen.int(in: 0...2), Gen.uint64(), Gen.uint64()).map { makeSpec(kind: $0.0, $0.1, $0.2) }
        let separator = Gen.element(of: [",", ", ", " ,", ",,", "\t,\t"])
        await propertyCheck(count: 1000, input: anySpec.array(of: 1...20), separator) { specs, separator in
            let text = "bytes=" + specs.map(specText).joined(separator: separator!)
            #expect(RangeHeader.parse(text) == RangeHeader(specs: specs), "\(text)")
        }
    }

    @Test("the decision serves what evaluate gives, for one spec (held inline) and for several")
    func decisionAgreesWithEvaluate() async {
        await propertyCheck(
            count: 2000, input: Gen.int(in: 0...64), smallSpec.array(of: 1...4), Gen.int(in: 0...4)
        ) { length, specs, maxRanges in
            let text = "bytes=" + specs.map(specText).joined(separator: ",")
            let decision = RequestDecision.decide(
                ConditionalRequest(range: text), representation: RepresentationMetadata(length: UInt64(length)),
                options: DecisionOptions(maxRanges: maxRanges))
            let expected: ResponseDecision =
                switch RangeHeader(specs: specs).evaluate(length: UInt64(length), maxRanges: maxRanges) {
                case .ignore: .full
                case .unsatisfiable: .rangeNotSatisfiable
                case .satisfiable(let ranges): .partial(ranges)
                }
            #expect(decision == expected, "length \(length), max \(maxRanges), \(text)")
        }
    }

    @Test("the range limit acts through the spec count alone")
    func maxRangesLimit() async {
        await propertyCheck(count: 500, input: smallSpec.array(of: 1...40), Gen.int(in: 1...40)) { specs, maxRanges in
            let header = RangeHeader(specs: specs)
            let evaluation = header.evaluate(length: 50, maxRanges: maxRanges)
            if specs.count > maxRanges {
                #expect(evaluation == .ignore)
            } else {
                #expect(evaluation == header.evaluate(length: 50, maxRanges: Int.max))
            }
        }
    }
}
