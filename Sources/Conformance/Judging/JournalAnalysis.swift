import RangeServer

/// The journal, read as a conversation: what each file received, what was sent twice, what resumes carried.
struct JournalAnalysis {
    private(set) var violations: [Violation] = []
    private(set) var refetchedBytes: UInt64 = 0
    /// `refetchedBytes` by the request that fetched them again, by `seq`: the bounds leave out a harness re-run's.
    private(set) var refetchedBytesBySeq: [Int: UInt64] = [:]
    private(set) var simultaneousConnections = 0
    /// Bytes fetched again because a resume started before the bytes received, up to `rewindAllowance` per resume:
    /// what the client had not written yet (a buffer) and asked for again. A cost, shown in the cell; the bounds leave
    /// it out (included in `refetchedBytes`).
    private(set) var rewoundBytes: UInt64 = 0
    /// How many resumes started before the bytes received.
    private(set) var rewinds = 0
    /// Resumes that started past the bytes received of the representation last seen, in words: no rule is broken by
    /// that alone (the client may hold bytes the journal files under another ETag, as when a CDN's edges churn it);
    /// a hole shows in the output as `corrupt`, and what was fetched twice in the cost.
    private(set) var skipsAhead: [String] = []

    /// A GET the client left of its own accord (`JournalEntry.abandoned`) before this many body bytes had gone out
    /// is a probe: a client reading the start of a response to learn its type or length before it downloads (yt-dlp
    /// does). The bytes counted are those handed to the socket, and a client that reads 512 bytes and closes has let
    /// its socket buffers fill first: 96 KiB measured on loopback for a prompt close, more when the close comes later.
    /// Probes are held to every rule, but neither their bytes nor their count go against the bounds.
    static let probeLimit: UInt64 = 1 << 20

    /// The row where resuming without the right validator corrupts the file: the `unsafe` violations name it.
    static let unsafeSibling = "version-change"

    /// The row where a resume validated by `ifRange` corrupts the file: a date (a Last-Modified, or a file's own
    /// mtime) lets through a new version that kept the old date (`lm-collide`); anything else a new version
    /// (`version-change`).
    static func unsafeSibling(ifRange: String) -> String {
        ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") ? unsafeSibling : "lm-collide"
    }

    /// How far before the bytes received a resume may start and have what it fetches again left out of the bounds:
    /// a client that resumes from what it had written (httpie, yt-dlp round down to their block) asks again for what
    /// its buffers still held.
    static let rewindAllowance: UInt64 = 1 << 20

    private struct Validators {
        var etag: String?
        var lastModified: String?
        var key: String { etag ?? lastModified ?? "-" }
    }

    private struct FileState {
        var received: [String: [Range<UInt64>]] = [:]
        var last: Validators?
        var interrupted = false
        /// Whether the client left the last response of its own accord: starting again from 0 is then its choice, a
        /// cost, never "restarted instead of resuming".
        var leftByClient = false
        var lastTime: Int64?
        /// The last answer's `Retry-After`: the wait it asks for in milliseconds (see `RetryAfterRule`), and as sent.
        var retryAfter: (wait: Int64, value: String)?

        func kept(prefilled: UInt64) -> UInt64 {
            let prefix = last.map { JournalAnalysis.prefix(received[$0.key] ?? []) } ?? 0
            return max(prefix, prefilled)
        }
    }

    /// - Parameters:
    ///   - probes: the `seq` of every probe (see `probeLimit`): held to the rules, never absorbed as received bytes.
    ///   - leftByClient: the `seq` of every response the client left of its own accord, no harness step involved.
    init(
        entries: [JournalEntry], multipleFiles: Bool, prefilled: UInt64, rangeRule: ScenarioExpectation.RangeRule,
        ifRangeRule: ScenarioExpectation.IfRangeRule, segmented: Bool = false, probes: Set<Int> = [],
        leftByClient: Set<Int> = []
    ) {
        var files: [String: FileState] = [:]
        var seen = Set<String>()
        func violate(_ violation: Violation) {
            if seen.insert(violation.reason).inserted { violations.append(violation) }
        }
        func skipAhead(_ words: String) { skipsAhead.append(words) }
        // Entries are journalled when a response ends, so a killed, dropped or stalled response can come
        // after its own resume in `seq` order; and a pooled client may send its retry on an older idle
        // connection, so connection numbers do not order requests either. `arrival` does.
        var ordered = entries.sorted { ($0.arrival, $0.seq) < ($1.arrival, $1.seq) }.filter { $0.method == "GET" }
        func fileKey(_ entry: JournalEntry) -> String { multipleFiles ? (entry.route ?? "") : "" }
        if segmented { ordered = Self.clipDelegated(ordered, fileKey: fileKey) }
        // What a segmented client certainly had when it sent `entry`: the responses of the file that ended at least
        // `segmentGrace` before the request arrived (a request arriving just after is likely to have been sent
        // before that end reached the client). Its other connections' responses still streaming then (the first response of a
        // download runs on past its segment until the client stops reading it) are not yet bytes it could
        // have known about, nor are validators whose response had not ended.
        func known(before entry: JournalEntry) -> FileState {
            var state = FileState()
            guard let arrived = Self.milliseconds(entry.arrivalTime) else { return state }
            for earlier in ordered where earlier.arrival < entry.arrival && fileKey(earlier) == fileKey(entry) {
                guard let ended = Self.milliseconds(earlier.time), ended + Self.segmentGrace < arrived else { continue }
                _ = Self.absorb(earlier, into: &state)
            }
            return state
        }
        let keyOf = fileKey
        for entry in ordered {
            let fileKey = fileKey(entry)
            var state = files[fileKey] ?? FileState()
            let time = Self.milliseconds(entry.time)
            // A retry is a request made after the Retry-After answer ended: one that arrived before it (another
            // segment's request, already on its way) cannot have heeded it.
            // A segmented client's request arriving within `segmentGrace` of the answer's end was likely sent by
            // another connection before that answer could have been read.
            if let retryAfter = state.retryAfter, let previous = state.lastTime,
                let arrived = Self.milliseconds(entry.arrivalTime) ?? time,
                segmented ? arrived > previous + Self.segmentGrace : arrived >= previous,
                arrived - previous < retryAfter.wait - 150
            {
                // RFC 9110 §10.2.3 says a client "ought to" wait: impolite, not wrong, and what gets clients banned.
                let asked = Int64(retryAfter.value) == nil ? " (a wait of \(retryAfter.wait)ms)" : ""
                violate(
                    Violation(
                        "retried after \(arrived - previous)ms despite Retry-After: \(retryAfter.value)\(asked) "
                            + "(RFC 9110 §10.2.3; retrying sooner is how clients get banned and retry storms start)",
                        grade: .costly))
            }
            let view = segmented ? known(before: entry) : state
            if !(300...399).contains(entry.status) {
                // A segmented client may restart from zero on a new validator one of its connections saw, even
                // before that response ended.
                let sawOther =
                    segmented
                    && state.received.keys.contains { key in view.last.map { $0.key != key } ?? true }
                // A segmented client learns a validator from a response's header, which its other connections can
                // act on while that response still streams: an If-Range naming one is no stale guess (a splice it
                // caused would show in the output).
                let seen: Set<String> =
                    segmented
                    ? Set(
                        ordered.filter { $0.arrival < entry.arrival && keyOf($0) == fileKey }.flatMap {
                            [$0.responseHeaders["etag"], $0.responseHeaders["last-modified"]].compactMap { $0 }
                        }) : []
                // A probe is no download: a GET from 0 that only looks is not a restart.
                checkRequest(
                    entry, state: view, prefilled: prefilled, rangeRule: rangeRule, ifRangeRule: ifRangeRule,
                    segmented: segmented, sawOtherRepresentation: sawOther || probes.contains(entry.seq),
                    seenValidators: seen, violate: violate, skipAhead: skipAhead)
            }
            // A probe's bytes were read a little and thrown away: the client does not have them to keep. What it
            // learnt, the representation's validators (a new ETag, say), it does have.
            if probes.contains(entry.seq) {
                if entry.status == 200 || entry.status == 206 {
                    state.last = Validators(
                        etag: entry.responseHeaders["etag"], lastModified: entry.responseHeaders["last-modified"])
                }
                state.lastTime = time
                files[fileKey] = state
                continue
            }
            let twice: UInt64
            if segmented, entry.status == 200 || entry.status == 206 {
                var known = view
                twice = Self.absorb(entry, into: &known)
                _ = Self.absorb(entry, into: &state)
            } else {
                twice = Self.absorb(entry, into: &state)
            }
            refetchedBytes += twice
            if twice > 0 { refetchedBytesBySeq[entry.seq, default: 0] += twice }
            if !segmented, entry.status == 206, let start = entry.requestHeaders["range"].flatMap(Self.rangeStart),
                start > 0, start < view.kept(prefilled: prefilled), rangeRule == .exact || rangeRule == .atMost,
                twice > 0
            {
                rewinds += 1
                rewoundBytes += min(view.kept(prefilled: prefilled) - start, Self.rewindAllowance, twice)
            }
            if entry.status == 200 || entry.status == 206 { state.leftByClient = leftByClient.contains(entry.seq) }
            state.retryAfter = entry.responseHeaders["retry-after"].flatMap { value in
                RetryAfterRule.wait(value, responseDate: entry.responseHeaders["date"], responseTime: time).map {
                    (wait: $0, value: value)
                }
            }
            state.lastTime = time
            files[fileKey] = state
        }
        simultaneousConnections = Self.simultaneous(entries)
    }

    /// How long after a response ended a segmented client's request may arrive and still have been sent before the
    /// client saw that end, in milliseconds: its connections send independently.
    static let segmentGrace: Int64 = 50

    /// A segmented client's responses cut short at the first byte it asked another connection for while they ran.
    ///
    /// A client that splits a running segment (or starts segments while its first response runs to the end of the
    /// file) stops reading the first response where the other begins; what the server had already sent past that
    /// point was on the way, never kept, and the journal's byte count includes it. A response is clipped at the
    /// lowest start, inside what it sent, of a request of the same file that arrived while it was open.
    static func clipDelegated(_ ordered: [JournalEntry], fileKey: (JournalEntry) -> String) -> [JournalEntry] {
        ordered.map { entry in
            guard entry.status == 200 || entry.status == 206, entry.outcome != .complete || entry.status == 200,
                let ended = milliseconds(entry.time)
            else { return entry }
            var start: UInt64 = 0
            if entry.status == 206 { start = entry.responseHeaders["content-range"].flatMap(contentRangeStart) ?? 0 }
            let end = start + entry.bodyBytesSent
            let delegated = ordered.compactMap { other -> UInt64? in
                guard other.arrival > entry.arrival, fileKey(other) == fileKey(entry),
                    let arrived = milliseconds(other.arrivalTime), arrived <= ended,
                    let from = other.requestHeaders["range"].flatMap(rangeStart), from > start, from < end
                else { return nil }
                return from
            }.min()
            guard let delegated else { return entry }
            var clipped = entry
            clipped.bodyBytesSent = delegated - start
            return clipped
        }
    }

    /// Adds a 200 or 206 response's bytes and validators to `state`; returns how many of its bytes `state`
    /// already had (of the same representation).
    private static func absorb(_ entry: JournalEntry, into state: inout FileState) -> UInt64 {
        guard entry.status == 200 || entry.status == 206 else { return 0 }
        let validators = Validators(
            etag: entry.responseHeaders["etag"], lastModified: entry.responseHeaders["last-modified"])
        var start: UInt64 = 0
        if entry.status == 206 {
            start = entry.responseHeaders["content-range"].flatMap(Self.contentRangeStart) ?? 0
        }
        let range = start..<(start + entry.bodyBytesSent)
        var ranges = state.received[validators.key] ?? []
        let overlap = Self.overlap(range, ranges)
        if !range.isEmpty { ranges = Self.union(ranges, range) }
        state.received[validators.key] = ranges
        state.last = validators
        state.interrupted = entry.outcome != .complete
        return overlap
    }

    private func checkRequest(
        _ entry: JournalEntry, state: FileState, prefilled: UInt64, rangeRule: ScenarioExpectation.RangeRule,
        ifRangeRule: ScenarioExpectation.IfRangeRule, segmented: Bool, sawOtherRepresentation: Bool,
        seenValidators: Set<String> = [], violate: (Violation) -> Void, skipAhead: (String) -> Void
    ) {
        let ifRange = entry.requestHeaders["if-range"]
        if let ifRange, ifRange.hasPrefix("W/") {
            violate(Violation("If-Range carries a weak ETag \(ifRange)", grade: .fail))
        }
        let kept = state.kept(prefilled: prefilled)
        let start = entry.requestHeaders["range"].flatMap(Self.rangeStart)
        // A Range from byte 0 after an interruption starts again as surely as no Range does.
        let restarts = entry.requestHeaders["range"] == nil || (start == 0 && !segmented)
        if restarts,
            (rangeRule == .exact || rangeRule == .atMost) && state.interrupted && kept > 0
                && !sawOtherRepresentation && !state.leftByClient
        {
            violate(Violation("restarted from 0 instead of resuming at \(kept)", grade: .costly))
        }
        guard let rangeHeader = entry.requestHeaders["range"] else { return }
        // A Range from byte 0 resumes nothing, whatever was received before (a segmented client's first request
        // asks for its first segment only; pySmartDL asks `bytes=0-LAST` after its probes): the answer is written
        // from the file's start, so no two versions can meet in it.
        if rangeRule == .forbidden, start != 0 {
            violate(
                Violation(
                    "resumed with Range \(rangeHeader) although no safe validator exists", grade: .unsafe,
                    sibling: Self.unsafeSibling))
            return
        }
        // Only under a resume rule: a response is journalled when it ends, so a stalled first response
        // may be missing from the journal while its resume is already there.
        if segmented {
            // Segments start wherever the client split the file; what must not happen under `exact` is asking
            // again for bytes of this representation it already has (under `at-most`, as for one connection, a
            // range may start early: `max-refetched` bounds what that costs).
            if let start, rangeRule == .exact, let last = state.last,
                let inside = (state.received[last.key] ?? []).first(where: { $0.contains(start) })
            {
                violate(
                    Violation(
                        "Range starts at \(start), inside bytes already received "
                            + "(\(inside.lowerBound)-\(inside.upperBound - 1))", grade: .costly))
            }
        } else if let start, rangeRule == .exact || rangeRule == .atMost, start > kept {
            // Breaks no rule by itself (issue 27): a hole shows in the output (`corrupt`), a refetch in the cost.
            skipAhead("Range starts at \(start), past the \(kept) bytes received")
        }
        // Under `exact`, a Range starting before the bytes received resumes from what the client had written: a cost
        // (`rewoundBytes`), never a failure.
        guard let last = state.last else { return }
        let wanted: String?
        switch ifRangeRule {
        case .any: return
        case .etag: wanted = last.etag
        case .lastModified: wanted = last.lastModified
        }
        // A Range from byte 0 keeps nothing that another version could splice with.
        guard let wanted, start != 0 else { return }
        if let ifRange {
            if ifRange != wanted && !seenValidators.contains(ifRange) {
                violate(
                    Violation(
                        "If-Range \(ifRange), expected \(wanted)", grade: .unsafe,
                        sibling: Self.unsafeSibling(ifRange: ifRange)))
            }
        } else {
            violate(
                Violation(
                    "Range request without If-Range (expected \(wanted))", grade: .unsafe, sibling: Self.unsafeSibling))
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

    /// The most requests open at one instant, each from its arrival to the end of its response: how many
    /// connections a segmented client had fetching at once.
    static func peakOpenRequests(_ entries: [JournalEntry]) -> Int {
        var events: [(time: Int64, change: Int)] = []
        for entry in entries where entry.method == "GET" {
            guard let arrived = milliseconds(entry.arrivalTime), let ended = milliseconds(entry.time) else { continue }
            events.append((arrived, 1))
            events.append((ended, -1))
        }
        // An end before an arrival at the same millisecond: a connection reused at once is not two.
        events.sort { ($0.time, $0.change) < ($1.time, $1.change) }
        var open = 0
        var peak = 0
        for event in events {
            open += event.change
            peak = max(peak, open)
        }
        return peak
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
