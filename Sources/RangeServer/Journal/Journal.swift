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
/// Appended to synchronously from libmicrohttpd's threads, hence a lock rather than an actor.
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
        var ring: [JournalRecord] = []
        var start = 0
        var nextSeq = 1
        var dropped = 0
        var fileWriteFailures = 0
        var lastFileError: String?

        /// Hands out the next sequence number.
        mutating func takeSeq() -> Int {
            defer { nextSeq += 1 }
            return nextSeq
        }

        /// Entries oldest first.
        var ordered: some Collection<JournalRecord> { ring[start...] + ring[..<start] }
    }

    private let state = NIOLockedValueBox(State())
    /// The file's descriptor, or -1. Written only under the state lock, so lines never interleave
    /// and file order matches `seq` order.
    private let fileDescriptor: Int32

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
        return state.withLockedValue { state in
            entry.seq = state.takeSeq()
            store(.entry(entry), in: &state)
            return entry
        }
    }

    /// Records a finished exchange, keeping its values as they are and building the entry (timestamp text,
    /// header dictionaries) only when someone reads it; with a journal file it is built at once, for the file.
    func append(_ exchange: CompletedExchange, endedAt time: timespec) {
        // Copied out of the exchange before the lock; under it only the sequence number is set.
        let pending = PendingJournalEntry(exchange: exchange, endedAt: time)
        state.withLockedValue { state in
            pending.seq = state.takeSeq()
            store(.exchange(pending), in: &state)
        }
    }

    /// Writes the file line, if there is a file, and puts the record in the ring. Called under the lock.
    private func store(_ record: consuming JournalRecord, in state: inout State) {
        if fileDescriptor >= 0 {
            // The line must be written now (it survives a crash), so there is nothing to defer.
            let entry = record.entry
            record = .entry(entry)
            var line = entry.jsonBytes
            line.append(UInt8(ascii: "\n"))
            if let failure = writeAll(line) {
                state.fileWriteFailures += 1
                state.lastFileError = failure
            }
        }
        if state.ring.count < limit {
            state.ring.append(record)
        } else {
            state.ring[state.start] = record
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
        let matching = state.withLockedValue { state in
            state.ordered.filter { record in
                (run == nil || record.run == run) && (scenario == nil || record.scenario == scenario)
                    && (since == nil || record.seq > since!)
            }
        }
        // Outside the lock: building entries is the deferred work, and appends should not wait for it.
        return matching.map(\.entry)
    }

    /// Empties the in-memory journal and resets `droppedCount`; sequence numbers keep increasing,
    /// and the file, if any, is left as it is.
    public func clear() {
        state.withLockedValue { state in
            state.ring.removeAll()
            state.start = 0
            state.dropped = 0
        }
    }

    /// How many entries the ring has dropped to stay within `limit` since the last `clear()`.
    public var droppedCount: Int { state.withLockedValue { $0.dropped } }

    /// How many entries are in memory now.
    public var count: Int { state.withLockedValue { $0.ring.count } }

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

/// A journal slot: an entry as given to `Journal.append(_:)`, or an exchange not yet formatted as one.
enum JournalRecord: Sendable {
    case entry(JournalEntry)
    case exchange(PendingJournalEntry)

    var seq: Int {
        switch self {
        case .entry(let entry): entry.seq
        case .exchange(let pending): pending.seq
        }
    }

    var run: String? {
        switch self {
        case .entry(let entry): entry.run
        case .exchange(let pending): pending.scenario?.run
        }
    }

    var scenario: String? {
        switch self {
        case .entry(let entry): entry.scenario
        case .exchange(let pending): pending.scenario?.scenario
        }
    }

    var entry: JournalEntry {
        switch self {
        case .entry(let entry): entry
        case .exchange(let pending): pending.entry
        }
    }
}

/// A finished exchange with the wall-clock time it ended: everything a `JournalEntry` says, before any of it
/// is formatted. It keeps the plan's values, not the plan, so a journaled body (an open file, a literal) is
/// not held for as long as the entry lives.
///
/// A class, so the record the ring holds is one reference: copying it into and out of the ring under the
/// lock costs one retain, not one per string and array inside. `@unchecked Sendable` because `seq` is set
/// once, under the journal's lock, before the object is published to the ring, and never changes after.
final class PendingJournalEntry: @unchecked Sendable {
    var seq = 0
    let request: IncomingRequest
    let status: Int
    let responseHeaders: [(name: String, value: String)]
    let bodyBytesPlanned: UInt64
    let bodyBytesSent: UInt64
    let outcome: JournalOutcome
    let faults: [String]
    let scenario: ScenarioContext?
    let endedAt: timespec

    init(exchange: CompletedExchange, endedAt: timespec) {
        request = exchange.request
        status = exchange.plan.status
        responseHeaders = exchange.plan.headers
        bodyBytesPlanned = exchange.plan.body.length
        bodyBytesSent = exchange.bodyBytesSent
        outcome = exchange.outcome
        faults = exchange.plan.faults
        scenario = exchange.plan.scenario
        self.endedAt = endedAt
    }

    var entry: JournalEntry {
        JournalEntry(
            seq: seq,
            time: JournalEntry.timestamp(
                secondsSince1970: Int64(endedAt.tv_sec), milliseconds: Int(endedAt.tv_nsec / 1_000_000)),
            method: request.method,
            target: request.target,
            scenario: scenario?.scenario,
            run: scenario?.run,
            route: scenario?.route,
            attempt: scenario?.attempt,
            requestHeaders: request.headerDictionary,
            status: status,
            responseHeaders: JournalEntry.headerDictionary(responseHeaders),
            bodyBytesPlanned: bodyBytesPlanned,
            bodyBytesSent: bodyBytesSent,
            outcome: outcome,
            faults: faults,
            connection: request.connectionID,
            peer: request.peerDescription,
            arrival: request.arrival
        )
    }
}
