import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The request journal: a bounded in-memory ring of `JournalEntry`, optionally mirrored to a
/// JSON Lines file.
///
/// Appended to synchronously from libmicrohttpd's threads, hence locks rather than an actor. A memory-only
/// journal stages each thread's exchanges in a shard of its own (see `append(_:endedAt:)`) and moves them into the
/// ring, in the order the responses ended, when a shard fills up or before anything reads the journal; every
/// reader sees the journal as if each exchange had been stored when it ended.
///
/// Sequence numbers start at 1 and only ever increase: `clear()` empties the ring but does not reset
/// them, so a reader polling with `since=` never sees a number twice or misses entries it has not
/// read because of a clear. When the ring is full the oldest entry is dropped and counted in
/// `droppedCount`; a gap between `since` and the first returned `seq` tells a reader it fell behind.
public final class Journal: Sendable {
    /// The default number of entries kept in memory.
    public static let defaultLimit = 100_000

    /// The most entries kept in memory.
    public let limit: Int
    /// The JSON Lines file every entry is also written to, if any.
    public let filePath: String?

    private struct State {
        /// The ring's storage; grows up to `limit`, then `start` marks the oldest entry.
        var ring: [JournalSlot] = []
        var start = 0
        var nextSeq = 1
        var dropped = 0
        var fileWriteFailures = 0
        var lastFileError: String?
        /// The slots' text, oldest first, in the order the slots were stored.
        var text = JournalText()

        /// Hands out the next sequence number.
        mutating func takeSeq() -> Int {
            defer { nextSeq += 1 }
            return nextSeq
        }

        /// Slots oldest first.
        var ordered: some Collection<JournalSlot> { ring[start...] + ring[..<start] }
    }

    private let state = NIOLockedValueBox(State())
    /// The file's descriptor, or -1. Written only under the state lock, so lines never interleave
    /// and file order matches `seq` order.
    private let fileDescriptor: Int32
    /// Exchanges recorded but not yet in the ring, one shard per thread (threads beyond the count share).
    /// Always empty with a journal file, whose lines must be written as the exchanges end.
    private let shards: [StagingShard]

    /// How many shards stage exchanges.
    static let shardCount = 8
    /// A shard holding this many exchanges moves every shard's into the ring: the shared lock is taken once per
    /// this many exchanges of a thread instead of once per exchange.
    static let stagingLimit = 256

    /// Makes a journal.
    ///
    /// - Parameters:
    ///   - limit: the most entries kept in memory, at least 1.
    ///   - filePath: a JSON Lines file to append every entry to (created if missing, never truncated),
    ///     or `nil` for memory only.
    /// - Throws: `RangeServerError.invalidConfiguration` for a limit below 1, and
    ///   `RangeServerError.journalFile` when the file cannot be opened.
    public init(limit: Int = Journal.defaultLimit, filePath: String? = nil) throws {
        guard limit >= 1 else {
            throw RangeServerError.invalidConfiguration("journal limit must be at least 1, got \(limit)")
        }
        self.limit = limit
        self.filePath = filePath
        if let filePath {
            let descriptor = retryingOnInterrupt { open(filePath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) }
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                throw RangeServerError.journalFile("cannot open journal file \(filePath): \(reason)")
            }
            fileDescriptor = descriptor
        } else {
            fileDescriptor = -1
        }
        shards = (0..<Self.shardCount).map { _ in StagingShard() }
    }

    deinit {
        if fileDescriptor >= 0 { close(fileDescriptor) }
    }

    /// Records an entry, assigning its sequence number.
    ///
    /// With a file, the line is written with `write(2)` before this returns, so it survives a crash of
    /// the server (there is no user-space buffer to flush). A failed write is counted in
    /// `fileWriteFailures` rather than thrown: losing a log line must not fail the request.
    ///
    /// - Parameters:
    ///   - entry: the entry; its `seq` is ignored.
    /// - Returns: the entry as stored, with its `seq`.
    @discardableResult
    public func append(_ entry: JournalEntry) -> JournalEntry {
        var entry = entry
        return withStagedExchangesStored { state in
            entry.seq = state.takeSeq()
            if fileDescriptor >= 0 { writeLine(entry, in: &state) }
            store(JournalSlot(entry: entry, textStart: state.text.end), in: &state)
            return entry
        }
    }

    /// Records a finished exchange: its numbers go into a fixed-size slot and its text (method, target, peer,
    /// header names and values) into a byte ring, so a request allocates nothing here and dropping the oldest entry
    /// frees nothing; the entry is formatted only when someone reads it. With a journal file it is also formatted at
    /// once, for the file.
    ///
    /// Without a file the slot and its text are staged in the calling thread's shard, under that shard's lock, which
    /// no other pool thread takes: the one journal lock and its sequence counter, taken by every request of every
    /// pool thread, kept their cache lines moving between cores. The sequence number is assigned when the staged
    /// exchanges move into the ring (`storeStagedExchanges`), which every reader makes happen first.
    func append(_ exchange: CompletedExchange, endedAt time: timespec) {
        let request = exchange.request
        let plan = exchange.plan
        let extras: JournalSlot.Extras? =
            plan.faults.isEmpty && plan.scenario == nil
            ? nil : JournalSlot.Extras(faults: plan.faults, scenario: plan.scenario)
        var slot = JournalSlot(
            seq: 0, seconds: Int64(time.tv_sec), nanoseconds: Int32(truncatingIfNeeded: time.tv_nsec),
            status: Int32(truncatingIfNeeded: plan.status), outcome: exchange.outcome,
            peerPort: UInt16(truncatingIfNeeded: request.peerPort), bodyBytesPlanned: plan.body.length,
            bodyBytesSent: exchange.bodyBytesSent, connection: request.connectionID, arrival: request.arrival,
            textStart: 0, textLength: 0, extras: extras
        )
        guard fileDescriptor < 0 else {
            JournalText.encode(request: request, responseHeaders: plan.headers) { text in
                withStagedExchangesStored { state in
                    slot.seq = state.takeSeq()
                    slot.textStart = state.text.end
                    slot.textLength = UInt32(text.count)
                    state.text.append(text)
                    writeLine(slot.entry(text: text), in: &state)
                    store(slot, in: &state)
                }
            }
            return
        }
        let shard = shards[threadShardIndex() % shards.count]
        let full = JournalText.encode(request: request, responseHeaders: plan.headers) { text in
            shard.staged.withLockedValue { staged in
                slot.textStart = staged.text.end
                slot.textLength = UInt32(text.count)
                staged.text.append(text)
                staged.slots.append(slot)
                return staged.slots.count >= Self.stagingLimit
            }
        }
        if full { state.withLockedValue { storeStagedExchanges(in: &$0) } }
    }

    /// Runs `body` under the journal lock, after moving every staged exchange into the ring.
    private func withStagedExchangesStored<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLockedValue { state in
            storeStagedExchanges(in: &state)
            return body(&state)
        }
    }

    /// Moves the staged exchanges of every shard into the ring in the order the responses ended (ties by arrival),
    /// numbering them as they go. Called under the journal lock; takes every shard's lock, always in the same order,
    /// and appenders never wait for the journal lock while holding a shard's, so this cannot deadlock.
    private func storeStagedExchanges(in state: inout State) {
        var locked: [UnsafeMutablePointer<StagingShard.Staged>] = []
        locked.reserveCapacity(shards.count)
        withEveryShardLocked(from: 0, &locked) { staged in
            var order: [(seconds: Int64, nanoseconds: Int32, arrival: Int, shard: Int, index: Int)] = []
            for (shard, pointer) in staged.enumerated() {
                for (index, slot) in pointer.pointee.slots.enumerated() {
                    order.append((slot.seconds, slot.nanoseconds, slot.arrival, shard, index))
                }
            }
            guard !order.isEmpty else { return }
            order.sort { ($0.seconds, $0.nanoseconds, $0.arrival) < ($1.seconds, $1.nanoseconds, $1.arrival) }
            for position in order {
                let shard = staged[position.shard]
                var slot = shard.pointee.slots[position.index]
                let stagedStart = slot.textStart
                slot.seq = state.takeSeq()
                slot.textStart = state.text.end
                shard.pointee.text.withBytes(from: stagedStart, count: Int(slot.textLength)) { state.text.append($0) }
                store(slot, in: &state)
            }
            for shard in staged where !shard.pointee.slots.isEmpty {
                shard.pointee.slots.removeAll(keepingCapacity: true)
                shard.pointee.text.release(upTo: shard.pointee.text.end)
            }
        }
    }

    /// Locks the shards from `index` on, in order, collecting their staged values, and runs `body` with all of
    /// them held.
    private func withEveryShardLocked(
        from index: Int, _ locked: inout [UnsafeMutablePointer<StagingShard.Staged>],
        _ body: ([UnsafeMutablePointer<StagingShard.Staged>]) -> Void
    ) {
        guard index < shards.count else { return body(locked) }
        shards[index].staged.withLockedValue { staged in
            withUnsafeMutablePointer(to: &staged) { pointer in
                locked.append(pointer)
                withEveryShardLocked(from: index + 1, &locked, body)
            }
        }
    }

    /// Writes the entry's line to the file. Called under the lock, so lines follow `seq` order.
    private func writeLine(_ entry: JournalEntry, in state: inout State) {
        var line = entry.jsonBytes
        line.append(UInt8(ascii: "\n"))
        if let failure = writeAll(line) {
            state.fileWriteFailures += 1
            state.lastFileError = failure
        }
    }

    /// Puts the slot in the ring, dropping the oldest slot (and its text) when the ring is full. Called under
    /// the lock, after the slot's text was appended.
    private func store(_ slot: JournalSlot, in state: inout State) {
        if state.ring.count < limit {
            state.ring.append(slot)
        } else {
            let oldest = state.ring[state.start]
            state.text.release(upTo: oldest.textStart + UInt64(oldest.textLength))
            state.ring[state.start] = slot
            state.start = (state.start + 1) % limit
            state.dropped += 1
        }
    }

    /// The entries in `seq` order, optionally filtered.
    ///
    /// - Parameters:
    ///   - run: only entries of this scenario run.
    ///   - scenario: only entries of this scenario.
    ///   - since: only entries with `seq` greater than this.
    /// - Returns: the matching entries, oldest first.
    public func entries(run: String? = nil, scenario: String? = nil, since: Int? = nil) -> [JournalEntry] {
        // Under the lock only the matching slots and a copy of their text are taken: the ring may overwrite
        // the text as soon as the lock is released.
        let (matching, text) = withStagedExchangesStored { state in
            var text: [UInt8] = []
            var matching: [(slot: JournalSlot, offset: Int)] = []
            for slot in state.ordered
            where (run == nil || slot.run == run) && (scenario == nil || slot.scenario == scenario)
                && (since == nil || slot.seq > since!)
            {
                matching.append((slot, text.count))
                state.text.copy(from: slot.textStart, count: Int(slot.textLength), appendingTo: &text)
            }
            return (matching, text)
        }
        // Outside the lock: building entries is the deferred work, and appends should not wait for it.
        return text.withUnsafeBytes { bytes in
            matching.map { slot, offset in
                slot.entry(text: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(slot.textLength)]))
            }
        }
    }

    /// Empties the in-memory journal and resets `droppedCount`; sequence numbers keep increasing,
    /// and the file, if any, is left as it is.
    public func clear() {
        withStagedExchangesStored { state in
            state.ring.removeAll()
            state.start = 0
            state.dropped = 0
            state.text.release(upTo: state.text.end)
        }
    }

    /// How many entries the ring has dropped to stay within `limit` since the last `clear()`.
    public var droppedCount: Int { withStagedExchangesStored { $0.dropped } }

    /// How many entries are in memory now.
    public var count: Int { withStagedExchangesStored { $0.ring.count } }

    /// How many entries could not be written to the file, and the last reason.
    public var fileWriteFailures: (count: Int, lastError: String?) {
        state.withLockedValue { ($0.fileWriteFailures, $0.lastFileError) }
    }

    /// The control API's journal document: `{"entries":[...],"dropped":N}`, compact UTF-8 JSON.
    ///
    /// - Parameters:
    ///   - entries: the entries to include, usually from `entries(run:scenario:since:)`.
    /// - Returns: the document; `dropped` is the current `droppedCount`.
    public func encodedJSON(entries: [JournalEntry]) -> [UInt8] {
        var writer = JSONWriter()
        writer.open("{")
        writer.key("entries")
        writer.open("[")
        for entry in entries { entry.write(to: &writer) }
        writer.close("]")
        writer.key("dropped")
        writer.number(droppedCount)
        writer.close("}")
        return writer.output
    }

    /// Writes all bytes, retrying on EINTR and short writes; returns the failure reason, if any.
    private func writeAll(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return "write: \(String(cString: strerror(errno)))"
                }
                offset += written
            }
            return nil
        }
    }
}

/// One shard of the journal's staging: exchanges recorded by the threads that use it, not yet in the ring.
private final class StagingShard: Sendable {
    struct Staged {
        var slots: [JournalSlot] = []
        var text = JournalText()
    }

    /// A `pthread_mutex_t` lock (NIOConcurrencyHelpers), not `Synchronization.Mutex`: ThreadSanitizer sees the
    /// order a pthread mutex gives, while `Mutex` waits on a futex of its own that it cannot see, so every merge of
    /// the shards would be reported as a race (see docs/reliability.md).
    let staged = NIOLockedValueBox(Staged())
}
