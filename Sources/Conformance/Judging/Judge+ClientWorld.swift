import RangeServer

/// The judge's rules for the rows that change the client's own world: a full disk, a dead IPv6 address.
extension Judge {
    /// `disk-full-at`: the first start, on the full filesystem, must report failure and leave under the output's name
    /// nothing but a correct prefix (bytes past it that no version holds are allowed, a preallocated tail a resume
    /// overwrites). The second start is judged by the row's other rules (its outcome, `max-refetched`).
    ///
    /// - Parameters:
    ///   - facts: the run, with ``RunFacts/diskFull`` set.
    /// - Returns: the violations (success on a full disk is `corrupt`: a truncated file presented as complete) and
    ///   one note on what the first start left.
    static func diskFullFindings(_ facts: RunFacts) -> (reasons: [Violation], notes: [String]) {
        guard let full = facts.diskFull else { return ([], []) }
        let room = ByteSize.format(full.size)
        var reasons: [Violation] = []
        switch full.exit {
        case .failure: break
        case .success:
            if let truncated = truncation(full, facts) {
                reasons.append(
                    Violation("reported success on a full disk (\(room) of room), \(truncated)", grade: .corrupt))
            }
        case .cancelled:
            reasons.append(Violation("reported cancelled on a full disk (\(room) of room), not failure", grade: .fail))
        }
        let reported = "on a full disk (\(room) of room) it reported \(full.exit.summary)"
        // A remote tester reports the start's outcome only, not what it left.
        guard let left = full.outputs else { return (reasons, [reported + "; given room, it ran again"]) }
        for output in left where output.exists {
            let lastKnown = output.segments.lastIndex { $0.version != nil }
            let bad = output.segments.enumerated().first { index, segment in
                // Unknown bytes before known ones, or bytes of another version: not a prefix a resume can build on.
                (segment.version == nil && lastKnown.map { index < $0 } == true)
                    || (segment.version != nil && segment.version != facts.expectedVersion)
            }
            if let bad {
                reasons.append(
                    Violation(
                        "on the full disk it left bytes of \(output.name) that are not the representation at offset "
                            + "\(bad.element.range.lowerBound)", grade: .corrupt))
            }
        }
        let kept = left.map { output -> String in
            guard output.exists else { return "no \(output.name) (what it wrote, if anything, is in its state)" }
            let prefix = output.segments.first.flatMap { $0.version == facts.expectedVersion ? $0.range.count : nil }
            return "\(ByteSize.format(UInt64(prefix ?? 0))) of \(output.name) correct"
        }
        let note = reported + " and left " + kept.joined(separator: ", ") + "; given room, it ran again"
        return (reasons, [note])
    }

    /// Why a success the first start reported cannot be true, or nil when it may be: an output it left short or not
    /// the representation; or, when what it left was not seen, a filesystem too small for the files.
    private static func truncation(_ full: RunFacts.DiskFull, _ facts: RunFacts) -> String? {
        guard let left = full.outputs else {
            let total = facts.resourceLength * UInt64(max(1, facts.outputs.count))
            return full.size < total ? "which cannot hold the \(ByteSize.format(total)) it fetches" : nil
        }
        let complete = left.allSatisfy { output in
            output.exists && output.size == facts.resourceLength
                && output.segments.allSatisfy { $0.version == facts.expectedVersion }
        }
        if complete { return nil }
        let sizes = left.map { "\($0.name) \(ByteSize.format($0.size))" }.joined(separator: ", ")
        return "leaving \(sizes) of " + ByteSize.format(facts.resourceLength)
    }

    /// `dead-ipv6`: how often the client tried the dead address, as a note (the runner makes a row whose client never
    /// tried it n/a).
    static func deadIPv6Notes(_ facts: RunFacts) -> [String] {
        guard let attempts = facts.ipv6Attempts else { return [] }
        if attempts == 0 { return ["did not try IPv6: no connect to the dead [::1] was seen"] }
        return ["tried the dead [::1] \(attempts == 1 ? "once" : "\(attempts) times") (connects that never complete)"]
    }

    /// `disk-full-at`, segmented: what each resume of the second start fetched again from inside a range the server
    /// had sent in the first, up to ``JournalAnalysis/rewindAllowance`` per resume. The segmented reading of the
    /// journal has no "resumed before the bytes received" (a Range may start anywhere), so without this every
    /// connection's bytes on the way when the disk filled, which the client had no room to write, would count as
    /// refetched. A resume exactly at a first-start range's start (a segment begun again from nothing) is not one.
    ///
    /// - Parameters:
    ///   - facts: the run.
    ///   - refetchedBySeq: the bytes each request fetched again (``JournalAnalysis``).
    /// - Returns: the bytes to leave out of `max-refetched`; 0 for any other row or client.
    static func segmentedFullDiskRewinds(_ facts: RunFacts, refetchedBySeq: [Int: UInt64]) -> UInt64 {
        guard facts.diskFull != nil, facts.segmented else { return 0 }
        let gets = facts.entries.filter { $0.method == "GET" && ($0.status == 200 || $0.status == 206) }
        // The first start's responses: the span of the resource each one sent.
        let sent: [Range<UInt64>] = gets.filter { facts.launchIndex(of: $0) == 0 }.map { entry in
            let start = entry.requestHeaders["range"].flatMap(JournalAnalysis.rangeStart) ?? 0
            return start..<(start + entry.bodyBytesSent)
        }
        var total: UInt64 = 0
        for entry in gets where (facts.launchIndex(of: entry) ?? 0) > 0 && entry.status == 206 {
            guard let start = entry.requestHeaders["range"].flatMap(JournalAnalysis.rangeStart),
                let cover = sent.first(where: { $0.lowerBound < start && start < $0.upperBound })
            else { continue }
            total += min(refetchedBySeq[entry.seq] ?? 0, cover.upperBound - start, JournalAnalysis.rewindAllowance)
        }
        return total
    }
}
