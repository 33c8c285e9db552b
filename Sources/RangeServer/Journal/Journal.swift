import NIOConcurrencyHelpers
import SystemCalls

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
        let text = JournalText()
        /// The extras of the slots in the ring that have some, by `seq`: few exchanges have any, and keeping them
        /// out of the slots keeps every slot a plain value.
        var extras: [Int: JournalSlot.Extras] = [:]

        /// Hands out the next sequence number.
        mutating func takeSeq() -> Int {
            defer { nextSeq += 1 }
            return nextSeq
        }

        /// Slots oldest first.
        var ordered: some Collection<JournalSlot> { ring[start...] + ring[..<start] }

        /// The slot's extras, if it has any.
        func extras(of slot: JournalSlot) -> JournalSlot.Extras? {
            slot.hasExtras ? extras[slot.seq] : nil
        }
    }

    private let state = NIOLockedValueBox(State())
    /// The requests still being answered; see `settled(run:timeout:)`.
    let openExchanges = OpenExchanges()
    private typealias Extras = JournalSlot.Extras
    /// The file's descriptor, or -1. Written only under the state lock, so lines never interleave
    /// and file order matches `seq` order.
    private let fileDescriptor: Int32
    /// Exchanges recorded but not yet in the ring, one shard per thread (threads beyond the count share).
    /// No shards at all with a journal file, whose lines must be written as the exchanges end.
    private let staging: StagingShards

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
            do throws(SystemCallError) {
                fileDescriptor = try systemCall("open") {
                    open(filePath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
                }
            } catch {
                throw RangeServerError.journalFile("cannot open journal file \(filePath): \(error.reason)")
            }
        } else {
            fileDescriptor = -1
        }
        staging = StagingShards(count: filePath == nil ? Self.shardCount : 0, slotCapacity: Self.stagingLimit)
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
            store(JournalSlot(entry: entry, textStart: state.text.end), extras: Extras(entry: entry), in: &state)
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
        var hasExtras = !exchange.plan.faults.isEmpty
        // A pattern, not `!= nil`, which copied the scenario (three strings) out to compare it.
        if case .some = exchange.plan.scenario { hasExtras = true }
        if exchange.request.alpn != nil || exchange.request.alpnOffered != nil { hasExtras = true }
        var slot = JournalSlot(
            seq: 0, seconds: Int64(time.tv_sec), nanoseconds: Int32(truncatingIfNeeded: time.tv_nsec),
            status: Int32(truncatingIfNeeded: exchange.plan.status), outcome: exchange.outcome,
            peerPort: UInt16(truncatingIfNeeded: exchange.request.peerPort),
            bodyBytesPlanned: exchange.plan.body.length, bodyBytesSent: exchange.bodyBytesSent,
            connection: exchange.request.connectionID, arrival: exchange.request.arrival,
            arrivalTime: exchange.request.arrivalTime, textStart: 0, textLength: 0, hasExtras: hasExtras)
        slot.tls = exchange.request.isTLS
        slot.abandoned = exchange.abandoned
        if exchange.request.stream > 0 {
            slot.http2 = true
            slot.stream = UInt32(truncatingIfNeeded: exchange.request.stream)
        }
        let extras =
            hasExtras
            ? Extras(
                faults: exchange.plan.faults, scenario: exchange.plan.scenario,
                faultsApplied: exchange.plan.faultsApplied, alpn: exchange.request.alpn,
                alpnOffered: exchange.request.alpnOffered) : nil
        guard fileDescriptor < 0 else {
            let size = JournalText.encodedSize(request: exchange.request, responseHeaders: exchange.plan.headers)
            slot.textLength = UInt32(size)
            withUnsafeTemporaryAllocation(byteCount: size, alignment: 4) { buffer in
                JournalText.encode(
                    request: exchange.request, responseHeaders: exchange.plan.headers, into: buffer.baseAddress!)
                let text = UnsafeRawBufferPointer(buffer)
                withStagedExchangesStored { state in
                    slot.seq = state.takeSeq()
                    slot.textStart = state.text.end
                    state.text.append(text)
                    writeLine(slot.entry(text: text, extras: extras), in: &state)
                    store(slot, extras: extras, in: &state)
                }
            }
            return
        }
        let index = threadShardIndex() % staging.count
        while true {
            let full = staging.withShardLocked(index) { shard in
                shard.pointee.stage(slot, of: exchange, extras: extras)
            }
            // Full (nil, nothing staged) or filled by this one: store every shard's staged exchanges, which empties
            // them, and stage again if this one is still to go.
            if full != false { state.withLockedValue { storeStagedExchanges(in: &$0) } }
            if full != nil { return }
        }
    }

    /// Runs `body` under the journal lock, after moving every staged exchange into the ring.
    private func withStagedExchangesStored<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLockedValue { state in
            // With a file nothing is ever staged.
            if fileDescriptor < 0 { storeStagedExchanges(in: &state) }
            return body(&state)
        }
    }

    /// Moves the staged exchanges of every shard into the ring in the order the responses ended (ties by arrival),
    /// numbering them as they go. Called under the journal lock, which makes the caller the only merger; it holds a
    /// shard's lock only to take the shard's staged exchanges (see `StagingShards.withStagedExchangesTaken`), and
    /// appenders never wait for the journal lock while holding a shard's, so this cannot deadlock.
    private func storeStagedExchanges(in state: inout State) {
        staging.withStagedExchangesTaken { shards in
            var total = 0
            for index in shards.indices { total += shards[index].count }
            guard total > 0 else { return }
            var order: [StagedPosition] = []
            order.reserveCapacity(total)
            for index in shards.indices {
                for position in 0..<shards[index].count {
                    let slot = shards[index].slots[position]
                    order.append(
                        StagedPosition(
                            seconds: slot.seconds, nanoseconds: slot.nanoseconds, arrival: slot.arrival,
                            shard: Int32(index), index: Int32(position)))
                }
            }
            // A shard's own exchanges are nearly always in order already, and so is everything when one thread
            // staged it all: the sort is then one pass.
            order.sort()
            let text = state.text
            for position in order {
                // Fields read in place: a copy of the shard's buffer would retain its extras for every exchange.
                let shard = Int(position.shard)
                var slot = shards[shard].slots[Int(position.index)]
                let extras = slot.hasExtras ? shards[shard].extras[slot.seq] : nil
                let stagedText = shards[shard].text + Int(slot.textStart)
                slot.seq = state.takeSeq()
                slot.textStart = text.end
                text.append(stagedText, count: Int(slot.textLength))
                store(slot, extras: extras, in: &state)
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

    /// Puts the slot in the ring, with its extras beside it, dropping the oldest slot (its text and extras too)
    /// when the ring is full. Called under the lock, after the slot's text was appended.
    @inline(__always)
    private func store(_ slot: JournalSlot, extras: Extras?, in state: inout State) {
        if let extras { state.extras[slot.seq] = extras }
        if state.ring.count < limit {
            state.ring.append(slot)
        } else {
            let oldest = state.ring[state.start]
            state.text.release(upTo: oldest.textStart + UInt64(oldest.textLength))
            if oldest.hasExtras { state.extras[oldest.seq] = nil }
            state.ring[state.start] = slot
            // A comparison rather than `% limit`, a division for every exchange stored.
            state.start += 1
            if state.start == limit { state.start = 0 }
            state.dropped += 1
        }
    }

    /// Waits until the server has answered and journaled every request of `run` it has read (of any run, when nil),
    /// then returns that run's entries: what a judge reads once the client has exited, with no guessing from a quiet
    /// moment.
    ///
    /// A request counts from the arrival of its headers until its entry is stored. A response stalled by a fault
    /// whose client has closed the connection ends within a fraction of a second (the server looks at its socket
    /// while it waits), so a client that gave up on a `stall-for=30s` does not keep its run open for 30 seconds.
    ///
    /// - Parameters:
    ///   - run: the scenario run; nil waits for every request of the server.
    ///   - timeout: the longest wait; a request still open then (a client still downloading) is left out.
    /// - Returns: whether the run settled, and its entries (every entry when `run` is nil), oldest first.
    public func settled(
        run: String? = nil, timeout: Duration = .seconds(10)
    ) async -> (
        settled: Bool, entries: [JournalEntry]
    ) {
        let settled = await openExchanges.settled(run: run, timeout: timeout)
        return (settled, entries(run: run))
    }

    /// How many requests the server is still answering: of `run`, or of the whole server when nil.
    ///
    /// - Parameters:
    ///   - run: the scenario run, or nil.
    /// - Returns: the count of requests whose headers arrived and whose entries are not stored yet.
    public func openCount(run: String? = nil) -> Int { openExchanges.count(run: run) }

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
            var matching: [(slot: JournalSlot, extras: Extras?, offset: Int)] = []
            for slot in state.ordered {
                let extras = state.extras(of: slot)
                guard
                    (run == nil || extras?.run == run) && (scenario == nil || extras?.scenarioName == scenario)
                        && (since == nil || slot.seq > since!)
                else { continue }
                matching.append((slot, extras, text.count))
                state.text.copy(from: slot.textStart, count: Int(slot.textLength), appendingTo: &text)
            }
            return (matching, text)
        }
        // Outside the lock: building entries is the deferred work, and appends should not wait for it.
        return text.withUnsafeBytes { bytes in
            matching.map { slot, extras, offset in
                slot.entry(
                    text: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(slot.textLength)]),
                    extras: extras)
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
            state.extras.removeAll()
        }
    }

    /// How many entries the ring has dropped to stay within `limit` since the last `clear()`.
    public var droppedCount: Int { withStagedExchangesStored { $0.dropped } }

    /// How many entries are in memory now.
    public var count: Int { withStagedExchangesStored { $0.ring.count } }

    /// How many extras are kept beside the ring: one per entry in memory that has any, never more (for tests of
    /// the bookkeeping of dropped and cleared entries).
    var extrasCount: Int { withStagedExchangesStored { $0.extras.count } }

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
        let failure: SystemCallError? = bytes.withUnsafeBytes { buffer in
            do throws(SystemCallError) {
                try SystemCalls.writeAll(fileDescriptor, buffer)
                return nil
            } catch {
                return error
            }
        }
        return failure?.description
    }
}
