/// Which bytes of a segmented download are done, which are being fetched and by whom, and which wait: the pure
/// bookkeeping behind ``SegmentedDownload``, with no I/O.
///
/// Bytes are in one of three places: `pending` (nobody fetches them yet), an active segment's remaining
/// `position..<end` (a connection fetches them), or done (everything else). A connection that finishes its segment
/// claims the next pending piece; when none is left it splits the largest active segment in two and takes the
/// upper half, so no connection sits idle while another has more than two minimum sizes to go. Pending ranges are
/// taken in file order, a piece at a time, so the done prefix grows steadily.
///
/// A split only takes a segment that would otherwise run on for at least ``splitHorizon`` at its measured speed.
/// The request of the segment split is already on its way, and the server may have sent its upper half already:
/// on a fast link that is the whole segment, and splitting it would fetch those bytes twice. A segment too new to
/// have a speed (``speedWindow``) is not split yet: the connection waits (``Claim/wait``) and asks again.
struct SegmentPlan: Hashable, Sendable {
    /// What a connection gets when it asks for work.
    enum Claim: Hashable, Sendable {
        /// A range to fetch.
        case segment(Segment)
        /// Nothing now, but a running segment may become worth splitting: ask again shortly.
        case wait
        /// Nothing left to share.
        case none
    }

    /// One connection's current range.
    struct Segment: Hashable, Sendable {
        /// Where the segment began (the slot in the segment log records it).
        var start: Int64
        /// The next byte to write; `start..<position` is done.
        var position: Int64
        /// One past the last byte; lowered when another connection takes the upper part.
        var end: Int64
        /// When the connection began it, for its speed.
        var started: ContinuousClock.Instant

        /// The bytes still to fetch.
        var remaining: Int64 { end - position }
    }

    /// The representation's complete length.
    let total: Int64
    /// The smallest segment a split may produce (the last one of a file may be shorter).
    let minimumSize: Int64
    /// How long a segment must still have to run, at its speed, to be split.
    static let splitHorizon: Duration = .seconds(1)
    /// How long a segment must have run before its speed is trusted.
    static let speedWindow: Duration = .milliseconds(250)
    /// Unclaimed ranges, sorted by start, disjoint (the pieces of a division are adjacent; a release merges).
    private(set) var pending: [Range<Int64>]
    /// Active segments by connection.
    private(set) var active: [Int: Segment] = [:]
    /// The most a claim takes from one pending range: the share of one connection when the work was divided, so
    /// ranges merged back together (given back by connections that failed) are shared again, not taken whole.
    private(set) var pieceLimit: Int64 = .max

    /// Starts a plan from the ranges already done.
    ///
    /// - Parameters:
    ///   - total: The complete length.
    ///   - completed: Ranges already on disk (any order, may overlap, clipped to `0..<total`).
    ///   - minimumSize: The smallest segment a split may produce.
    init(total: Int64, completed: [Range<Int64>], minimumSize: Int64) {
        self.total = total
        self.minimumSize = max(1, minimumSize)
        self.pending = Self.complement(of: completed, in: 0..<total)
    }

    /// The ranges done, sorted and merged: everything neither pending nor still to fetch by a segment.
    var completed: [Range<Int64>] {
        Self.complement(of: pending + active.values.map { $0.position..<$0.end }, in: 0..<total)
    }

    /// How many bytes are done.
    var doneBytes: Int64 {
        total - pending.reduce(0) { $0 + Int64($1.count) } - active.values.reduce(0) { $0 + max(0, $1.remaining) }
    }

    /// Whether every byte is done.
    var isComplete: Bool { pending.isEmpty && active.values.allSatisfy { $0.remaining <= 0 } }

    /// The first byte not done: the end of the prefix that can be hashed.
    var contiguousEnd: Int64 {
        var end = total
        if let first = pending.first { end = min(end, first.lowerBound) }
        for segment in active.values where segment.remaining > 0 { end = min(end, segment.position) }
        return end
    }

    /// Pieces per connection when the work is divided.
    ///
    /// Connections take pieces in file order, so the done prefix, which is all the SHA-256 can read, grows with
    /// the whole download rather than with the first connection's share: with one piece per connection, 7 of 8
    /// shares were hashed only after the last byte arrived (0.2 s of 4.2 s for 256 MiB at 8 × 8 MiB/s). Each piece
    /// is one more request on a kept-alive connection.
    static let piecesPerConnection: Int64 = 16

    /// Divides the pending bytes into ``piecesPerConnection`` pieces per connection (on 64 KiB boundaries, none
    /// smaller than ``minimumSize`` but the last of a range): the division of the work among `count` connections.
    mutating func divide(into count: Int) {
        let bytes = pending.reduce(Int64(0)) { $0 + Int64($1.count) }
        guard count > 0, bytes > 0 else { return }
        let count64 = Int64(count) * Self.piecesPerConnection
        var piece = (bytes + count64 - 1) / count64
        piece = max(minimumSize, (piece + 0xFFFF) & ~0xFFFF)
        pieceLimit = piece
        var pieces: [Range<Int64>] = []
        for range in pending {
            var start = range.lowerBound
            while start < range.upperBound {
                var end = min(start + piece, range.upperBound)
                // A last piece under the minimum joins the one before it.
                if range.upperBound - end < minimumSize { end = range.upperBound }
                pieces.append(start..<end)
                start = end
            }
        }
        pending = pieces
    }

    /// Gives `connection` exactly `range` (the part of a pending range a response already streaming covers), or
    /// `nil` when `range` is not within one pending range.
    mutating func claim(
        _ connection: Int, exactly range: Range<Int64>, now: ContinuousClock.Instant
    ) -> Segment? {
        release(connection)
        guard !range.isEmpty,
            let index = pending.firstIndex(where: { $0.contains(range.lowerBound) && $0.upperBound >= range.upperBound }
            )
        else { return nil }
        let piece = pending[index]
        var rest: [Range<Int64>] = []
        if piece.lowerBound < range.lowerBound { rest.append(piece.lowerBound..<range.lowerBound) }
        if range.upperBound < piece.upperBound { rest.append(range.upperBound..<piece.upperBound) }
        pending.replaceSubrange(index...index, with: rest)
        let segment = Segment(start: range.lowerBound, position: range.lowerBound, end: range.upperBound, started: now)
        active[connection] = segment
        return segment
    }

    /// Gives `connection` new work: the first pending piece (in file order), else the upper half of the largest
    /// active segment worth splitting (see the type's discussion).
    ///
    /// - Parameter waitsWhileRunning: Whether a connection with nothing to take waits (``Claim/wait``) rather than
    ///   leaves (``Claim/none``) while another segment still has bytes to fetch: with a low-speed limit, a slow
    ///   segment may yet be aborted and give its rest back, however small (no split takes a segment under two
    ///   minimum sizes).
    mutating func claim(_ connection: Int, now: ContinuousClock.Instant, waitsWhileRunning: Bool = false) -> Claim {
        release(connection)
        if !pending.isEmpty {
            let index = 0
            var range = pending[index]
            if Int64(range.count) - pieceLimit >= minimumSize {
                pending[index] = range.lowerBound + pieceLimit..<range.upperBound
                range = range.lowerBound..<range.lowerBound + pieceLimit
            } else {
                pending.remove(at: index)
            }
            let segment = Segment(
                start: range.lowerBound, position: range.lowerBound, end: range.upperBound, started: now)
            active[connection] = segment
            return .segment(segment)
        }
        let large = active.filter { $0.value.remaining >= 2 * minimumSize }
        guard !large.isEmpty else {
            return waitsWhileRunning && active.values.contains { $0.remaining > 0 } ? .wait : .none
        }
        let worth = large.filter { _, segment in
            let elapsed = now - segment.started
            guard elapsed >= Self.speedWindow, segment.position > segment.start else { return false }
            let speed = Double(segment.position - segment.start) / elapsed.seconds
            return Double(segment.remaining) / speed >= Self.splitHorizon.seconds
        }
        guard let (owner, largest) = worth.max(by: { ($0.value.remaining, $1.key) < ($1.value.remaining, $0.key) })
        else { return .wait }
        let middle = Self.middle(of: largest.position..<largest.end)
        active[owner]?.end = middle
        let segment = Segment(start: middle, position: middle, end: largest.end, started: now)
        active[connection] = segment
        return .segment(segment)
    }

    /// The current end of `connection`'s segment (it may have been lowered by a split), or `nil` when it has none.
    func end(of connection: Int) -> Int64? { active[connection]?.end }

    /// Records that `connection` wrote up to `position`.
    mutating func advance(_ connection: Int, to position: Int64) {
        guard var segment = active[connection] else { return }
        segment.position = min(max(segment.position, position), segment.end)
        active[connection] = segment
    }

    /// Ends `connection`'s segment: what it did not fetch goes back to the pending ranges.
    mutating func release(_ connection: Int) {
        guard let segment = active.removeValue(forKey: connection) else { return }
        if segment.remaining > 0 {
            pending = Self.complement(
                of: Self.complement(of: pending + [segment.position..<segment.end], in: 0..<total), in: 0..<total)
        }
    }

    /// Where a range is split: its middle, moved down to a 64 KiB boundary (where write buffers, and so refetches
    /// after a kill, start) unless that leaves the lower part empty.
    private static func middle(of range: Range<Int64>) -> Int64 {
        let middle = range.lowerBound + Int64(range.count) / 2
        let aligned = middle & ~0xFFFF
        return aligned > range.lowerBound ? aligned : middle
    }

    /// The parts of `whole` not covered by `ranges`, sorted.
    static func complement(of ranges: [Range<Int64>], in whole: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var cursor = whole.lowerBound
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            let lower = max(range.lowerBound, whole.lowerBound)
            let upper = min(range.upperBound, whole.upperBound)
            guard lower < upper else { continue }
            if lower > cursor { result.append(cursor..<lower) }
            cursor = max(cursor, upper)
        }
        if cursor < whole.upperBound { result.append(cursor..<whole.upperBound) }
        return result
    }
}
