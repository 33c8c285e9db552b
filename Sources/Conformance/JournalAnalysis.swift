import RangeServer

/// The journal, read as a conversation: what each file received, what was sent twice, what resumes carried.
struct JournalAnalysis {
    private(set) var violations: [String] = []
    private(set) var refetchedBytes: UInt64 = 0
    private(set) var simultaneousConnections = 0

    private struct Validators {
        var etag: String?
        var lastModified: String?
        var key: String { etag ?? lastModified ?? "-" }
    }

    private struct FileState {
        var received: [String: [Range<UInt64>]] = [:]
        var last: Validators?
        var interrupted = false
        var lastTime: Int64?
        var retryAfter: Int?

        func kept(prefilled: UInt64) -> UInt64 {
            let prefix = last.map { JournalAnalysis.prefix(received[$0.key] ?? []) } ?? 0
            return max(prefix, prefilled)
        }
    }

    init(
        entries: [JournalEntry], multipleFiles: Bool, prefilled: UInt64, rangeRule: ScenarioExpectation.RangeRule,
        ifRangeRule: ScenarioExpectation.IfRangeRule, segmented: Bool = false
    ) {
        var files: [String: FileState] = [:]
        var seen = Set<String>()
        func violate(_ reason: String) {
            if seen.insert(reason).inserted { violations.append(reason) }
        }
        // Entries are journalled when a response ends, so a killed, dropped or stalled response can come
        // after its own resume in `seq` order; and a pooled client may send its retry on an older idle
        // connection, so connection numbers do not order requests either. `arrival` does.
        let ordered = entries.sorted { ($0.arrival, $0.seq) < ($1.arrival, $1.seq) }
        for entry in ordered where entry.method == "GET" {
            let fileKey = multipleFiles ? (entry.route ?? "") : ""
            var state = files[fileKey] ?? FileState()
            let time = Self.milliseconds(entry.time)
            // A retry is a request made after the Retry-After answer ended: one that arrived before it (another
            // segment's request, already on its way) cannot have heeded it.
            if let retryAfter = state.retryAfter, let previous = state.lastTime,
                let arrived = Self.milliseconds(entry.arrivalTime) ?? time, arrived >= previous,
                arrived - previous < Int64(retryAfter) * 1000 - 150
            {
                violate("retried after \(arrived - previous)ms despite Retry-After: \(retryAfter)")
            }
            if !(300...399).contains(entry.status) {
                checkRequest(
                    entry, state: state, prefilled: prefilled, rangeRule: rangeRule, ifRangeRule: ifRangeRule,
                    segmented: segmented, violate: violate)
            }
            if entry.status == 200 || entry.status == 206 {
                let validators = Validators(
                    etag: entry.responseHeaders["etag"], lastModified: entry.responseHeaders["last-modified"])
                var start: UInt64 = 0
                if entry.status == 206 {
                    start = entry.responseHeaders["content-range"].flatMap(Self.contentRangeStart) ?? 0
                }
                let range = start..<(start + entry.bodyBytesSent)
                var ranges = state.received[validators.key] ?? []
                refetchedBytes += Self.overlap(range, ranges)
                if !range.isEmpty { ranges = Self.union(ranges, range) }
                state.received[validators.key] = ranges
                state.last = validators
                state.interrupted = entry.outcome != .complete
            }
            state.retryAfter = entry.responseHeaders["retry-after"].flatMap { Int($0) }
            state.lastTime = time
            files[fileKey] = state
        }
        simultaneousConnections = Self.simultaneous(entries)
    }

    private func checkRequest(
        _ entry: JournalEntry, state: FileState, prefilled: UInt64, rangeRule: ScenarioExpectation.RangeRule,
        ifRangeRule: ScenarioExpectation.IfRangeRule, segmented: Bool, violate: (String) -> Void
    ) {
        let ifRange = entry.requestHeaders["if-range"]
        if let ifRange, ifRange.hasPrefix("W/") { violate("If-Range carries a weak ETag \(ifRange)") }
        let kept = state.kept(prefilled: prefilled)
        guard let rangeHeader = entry.requestHeaders["range"] else {
            if (rangeRule == .exact || rangeRule == .atMost) && state.interrupted && kept > 0 {
                violate("restarted from 0 instead of resuming at \(kept)")
            }
            return
        }
        let start = Self.rangeStart(rangeHeader)
        if rangeRule == .forbidden {
            violate("resumed with Range \(rangeHeader) although no safe validator exists")
            return
        }
        // Only under a resume rule: a response is journalled when it ends, so a stalled first response
        // may be missing from the journal while its resume is already there.
        if segmented {
            // Segments start wherever the client split the file; what must not happen is asking again for
            // bytes of this representation it already has.
            if let start, rangeRule == .exact || rangeRule == .atMost, let last = state.last,
                let inside = (state.received[last.key] ?? []).first(where: { $0.contains(start) })
            {
                violate(
                    "Range starts at \(start), inside bytes already received (\(inside.lowerBound)-\(inside.upperBound - 1))"
                )
            }
        } else if let start, rangeRule == .exact || rangeRule == .atMost, start > kept {
            violate("Range starts at \(start), past the \(kept) bytes received")
        } else if let start, rangeRule == .exact, state.last != nil, start != kept {
            violate("Range starts at \(start), expected \(kept) (the bytes received)")
        }
        guard let last = state.last else { return }
        let wanted: String?
        switch ifRangeRule {
        case .any: return
        case .etag: wanted = last.etag
        case .lastModified: wanted = last.lastModified
        }
        guard let wanted else { return }
        if let ifRange {
            if ifRange != wanted { violate("If-Range \(ifRange), expected \(wanted)") }
        } else {
            violate("Range request without If-Range (expected \(wanted))")
        }
    }

    /// The first offset of `bytes=S-` or `bytes=S-E` (the first range of a list); nil for suffix ranges.
    static func rangeStart(_ header: String) -> UInt64? {
        guard header.lowercased().hasPrefix("bytes=") else { return nil }
        let first = header.dropFirst(6).split(separator: ",").first ?? ""
        let trimmed = first.drop { $0 == " " }
        guard let dash = trimmed.firstIndex(of: "-") else { return nil }
        return UInt64(trimmed[..<dash])
    }

    /// The first offset of `Content-Range: bytes S-E/L`.
    static func contentRangeStart(_ header: String) -> UInt64? {
        guard header.lowercased().hasPrefix("bytes ") else { return nil }
        let rest = header.dropFirst(6)
        guard let dash = rest.firstIndex(of: "-") else { return nil }
        return UInt64(rest[..<dash])
    }

    /// The length of the contiguous run starting at 0.
    static func prefix(_ ranges: [Range<UInt64>]) -> UInt64 {
        ranges.first.map { $0.lowerBound == 0 ? $0.upperBound : 0 } ?? 0
    }

    /// How many bytes of `range` are already in the sorted, disjoint `ranges`.
    static func overlap(_ range: Range<UInt64>, _ ranges: [Range<UInt64>]) -> UInt64 {
        ranges.reduce(0) { total, existing in
            let low = max(range.lowerBound, existing.lowerBound)
            let high = min(range.upperBound, existing.upperBound)
            return total + (high > low ? high - low : 0)
        }
    }

    /// `ranges` with `range` added, kept sorted and merged.
    static func union(_ ranges: [Range<UInt64>], _ range: Range<UInt64>) -> [Range<UInt64>] {
        var result: [Range<UInt64>] = []
        var pending = range
        for existing in ranges {
            if existing.upperBound < pending.lowerBound {
                result.append(existing)
            } else if pending.upperBound < existing.lowerBound {
                result.append(pending)
                pending = existing
            } else {
                pending = min(existing.lowerBound, pending.lowerBound)..<max(existing.upperBound, pending.upperBound)
            }
        }
        result.append(pending)
        return result
    }

    /// A lower bound on simultaneous connections: a connection was certainly open between the end of its
    /// first response and the end of its last, so connections whose spans contain a common instant overlapped.
    static func simultaneous(_ entries: [JournalEntry]) -> Int {
        var spans: [Int: (first: Int64, last: Int64)] = [:]
        for entry in entries {
            guard let time = milliseconds(entry.time) else { continue }
            let span = spans[entry.connection] ?? (time, time)
            spans[entry.connection] = (min(span.first, time), max(span.last, time))
        }
        let values = Array(spans.values)
        guard !values.isEmpty else { return 0 }
        var best = 1
        for span in values {
            for instant in [span.first, span.last] {
                let others = values.filter { $0.first < instant && instant < $0.last }.count
                let containsSelf = span.first < instant && instant < span.last
                best = max(best, others + (containsSelf ? 0 : 1))
            }
        }
        return best
    }

    /// Milliseconds since 1970 of an RFC 3339 UTC timestamp such as `2026-11-21T20:05:31.123Z`.
    static func milliseconds(_ timestamp: String) -> Int64? {
        let bytes = Array(timestamp.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ start: Int, _ length: Int) -> Int64? {
            var value: Int64 = 0
            for index in start..<(start + length) {
                let byte = bytes[index]
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        let millis = bytes.count >= 23 && bytes[19] == UInt8(ascii: ".") ? number(20, 3) ?? 0 : 0
        // Days from civil, after Howard Hinnant.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    }
}
