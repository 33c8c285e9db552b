/// The outcome of resolving a ``RangeHeader`` against a representation of known length.
package enum RangeEvaluation: Hashable, Sendable {
    /// Serve the whole representation with 200, as if no `Range` had been sent.
    case ignore
    /// No spec selects any byte: answer 416 Range Not Satisfiable.
    case unsatisfiable
    /// Serve these ranges with 206: disjoint, non-adjacent, in the order the client first asked for them.
    case satisfiable([ClosedRange<UInt64>])
}

/// ``RangeEvaluation`` as the server's own decision uses it: a single range is held inline, not in an array.
enum RangeSelection: Hashable, Sendable {
    /// Serve the whole representation with 200, as if no `Range` had been sent.
    case ignore
    /// No spec selects any byte: answer 416 Range Not Satisfiable.
    case unsatisfiable
    /// Serve this one range with a single-part 206.
    case single(ClosedRange<UInt64>)
    /// Serve these two or more ranges with a multipart 206: disjoint, non-adjacent, in serving order.
    case multiple([ClosedRange<UInt64>])
}

extension RangeSpecs {
    /// What ``RangeHeader/evaluate(length:maxRanges:)`` gives for these specs, a single range held inline.
    ///
    /// - Parameters:
    ///   - length: The representation length in bytes.
    ///   - maxRanges: The largest number of specs honoured; a request with more is ignored.
    /// - Returns: What to serve.
    func evaluate(length: UInt64, maxRanges: Int) -> RangeSelection {
        guard rest.isEmpty else {
            switch RangeHeader(specs: all).evaluate(length: length, maxRanges: maxRanges) {
            case .ignore: return .ignore
            case .unsatisfiable: return .unsatisfiable
            case .satisfiable(let ranges): return ranges.count == 1 ? .single(ranges[0]) : .multiple(ranges)
            }
        }
        // The one-spec case of the general evaluation: one spec is over the count limit only when the limit is
        // zero, and a range within the representation never requests more bytes than it has.
        guard maxRanges >= 1 else { return .ignore }
        guard let range = first.resolved(length: length) else { return .unsatisfiable }
        return .single(range)
    }
}

extension RangeHeader {
    /// Resolves the specs against a representation of `length` bytes (RFC 9110 §14.1.2 and §14.2).
    ///
    /// Requests that look abusive are answered in full rather than refused, which RFC 9110 §14.2 permits: more specs
    /// than `maxRanges`, or specs whose combined size exceeds the representation (the overlapping-ranges amplification
    /// behind CVE-2011-3192). Unsatisfiable specs (`first >= length`, `-0`, anything on an empty representation) are
    /// dropped silently. The survivors are merged where they overlap or touch; each merged range takes the position of
    /// its earliest member, so a client that asked for the tail first still gets the tail first.
    ///
    /// - Parameters:
    ///   - length: The representation length in bytes.
    ///   - maxRanges: The largest number of specs honoured; a request with more is ignored.
    /// - Returns: What to serve. Runs in O(n log n) for n specs.
    public func evaluate(length: UInt64, maxRanges: Int) -> RangeEvaluation {
        guard specs.count <= maxRanges else { return .ignore }

        var resolved: [ClosedRange<UInt64>] = []
        resolved.reserveCapacity(specs.count)
        var requestedBytes: UInt64 = 0
        for spec in specs {
            guard let range = spec.resolved(length: length) else { continue }
            // Summed before merging on purpose: the cost of overlapping requests is what the limit is about.
            let (sum, overflow) = requestedBytes.addingReportingOverflow(range.upperBound - range.lowerBound + 1)
            guard !overflow, sum <= length else { return .ignore }
            requestedBytes = sum
            resolved.append(range)
        }
        guard !resolved.isEmpty else { return .unsatisfiable }
        return .satisfiable(Self.merge(resolved))
    }

    /// Merges overlapping or adjacent ranges, placing each result where its earliest member was requested.
    private static func merge(_ ranges: [ClosedRange<UInt64>]) -> [ClosedRange<UInt64>] {
        guard ranges.count > 1 else { return ranges }
        let byStart = ranges.indices.sorted { ranges[$0].lowerBound < ranges[$1].lowerBound }

        var groups: [(range: ClosedRange<UInt64>, firstRequested: Int)] = []
        for index in byStart {
            let range = ranges[index]
            // Every resolved upper bound is below `length`, so adding 1 cannot overflow.
            if let last = groups.last, range.lowerBound <= last.range.upperBound + 1 {
                groups[groups.count - 1] = (
                    last.range.lowerBound...max(last.range.upperBound, range.upperBound),
                    min(last.firstRequested, index)
                )
            } else {
                groups.append((range, index))
            }
        }
        groups.sort { $0.firstRequested < $1.firstRequested }
        return groups.map(\.range)
    }
}

extension ByteRangeSpec {
    /// The bytes this spec selects from a representation of `length` bytes, or `nil` when it selects none.
    ///
    /// - Parameter length: The representation length in bytes.
    /// - Returns: An inclusive range within `0..<length`, or `nil` when the spec is unsatisfiable.
    public func resolved(length: UInt64) -> ClosedRange<UInt64>? {
        guard length > 0 else { return nil }
        switch self {
        case .closed(let first, let last):
            guard first < length else { return nil }
            return first...min(last, length - 1)
        case .from(let first):
            guard first < length else { return nil }
            return first...(length - 1)
        case .suffix(let suffixLength):
            guard suffixLength > 0 else { return nil }
            return (length - min(suffixLength, length))...(length - 1)
        }
    }
}
