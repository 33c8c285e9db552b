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
        var ring: [JournalEntry] = []
        var start = 0
        var nextSeq = 1
        var dropped = 0
        var fileWriteFailures = 0
        var lastFileError: String?

        /// Entries oldest first.
        var ordered: some Collection<JournalEntry> { ring[start...] + ring[..<start] }
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
            var descriptor: Int32
            repeat {
                descriptor = open(filePath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            } while descriptor < 0 && errno == EINTR
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
        state.withLockedValue { state in
            var stored = entry
            stored.seq = state.nextSeq
            state.nextSeq += 1
            if state.ring.count < limit {
                state.ring.append(stored)
            } else {
                state.ring[state.start] = stored
                state.start = (state.start + 1) % limit
                state.dropped += 1
            }
            if fileDescriptor >= 0 {
                var line = stored.jsonBytes
                line.append(UInt8(ascii: "\n"))
                if let failure = writeAll(line) {
                    state.fileWriteFailures += 1
                    state.lastFileError = failure
                }
            }
            return stored
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
        state.withLockedValue { state in
            state.ordered.filter { entry in
                (run == nil || entry.run == run) && (scenario == nil || entry.scenario == scenario)
                    && (since == nil || entry.seq > since!)
            }
        }
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
