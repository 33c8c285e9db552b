#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One journal entry as the ring keeps it: the numbers inline, the text in the journal's `JournalText`.
///
/// A plain request's slot holds no reference at all, so storing it allocates nothing and overwriting the oldest
/// one frees nothing (dropping a 100,000-requests-old entry used to free half a dozen cold objects per request).
struct JournalSlot: Sendable {
    /// What few exchanges carry (faults, a scenario), or a whole entry given to `Journal.append(_:)`.
    final class Extras: Sendable {
        let faults: [String]
        let scenario: ScenarioContext?
        /// Set for entries appended as `JournalEntry` values; the slot's numbers and text are unused then.
        let entry: JournalEntry?

        init(faults: [String], scenario: ScenarioContext?) {
            self.faults = faults
            self.scenario = scenario
            self.entry = nil
        }

        init(entry: JournalEntry) {
            self.faults = []
            self.scenario = nil
            self.entry = entry
        }
    }

    var seq: Int
    /// When the response ended: whole seconds since 1970 and the nanoseconds after them (the entry shows
    /// milliseconds; the finer value orders exchanges staged on different threads).
    var seconds: Int64
    var nanoseconds: Int32
    var status: Int32
    var outcome: JournalOutcome
    var peerPort: UInt16
    var bodyBytesPlanned: UInt64
    var bodyBytesSent: UInt64
    var connection: Int
    var arrival: Int
    /// Where the slot's text starts in `JournalText` (a position that only grows) and how long it is.
    var textStart: UInt64
    var textLength: UInt32
    var extras: Extras?

    init(
        seq: Int, seconds: Int64, nanoseconds: Int32, status: Int32, outcome: JournalOutcome, peerPort: UInt16,
        bodyBytesPlanned: UInt64, bodyBytesSent: UInt64, connection: Int, arrival: Int, textStart: UInt64,
        textLength: UInt32, extras: Extras?
    ) {
        self.seq = seq
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.status = status
        self.outcome = outcome
        self.peerPort = peerPort
        self.bodyBytesPlanned = bodyBytesPlanned
        self.bodyBytesSent = bodyBytesSent
        self.connection = connection
        self.arrival = arrival
        self.textStart = textStart
        self.textLength = textLength
        self.extras = extras
    }

    /// A slot for an entry appended as a value; it has no text of its own.
    init(entry: JournalEntry, textStart: UInt64) {
        self.init(
            seq: entry.seq, seconds: 0, nanoseconds: 0, status: 0, outcome: entry.outcome, peerPort: 0,
            bodyBytesPlanned: 0, bodyBytesSent: 0, connection: 0, arrival: 0, textStart: textStart, textLength: 0,
            extras: Extras(entry: entry))
    }

    var run: String? { extras.flatMap { $0.entry?.run ?? $0.scenario?.run } }

    var scenario: String? { extras.flatMap { $0.entry?.scenario ?? $0.scenario?.scenario } }

    /// The entry, formatted from the slot and its text (as `JournalText.encode` wrote it).
    func entry(text: UnsafeRawBufferPointer) -> JournalEntry {
        if let entry = extras?.entry { return entry }
        var reader = JournalText.Reader(bytes: text)
        let method = reader.string()
        let target = reader.string()
        let peerAddress = reader.string()
        var requestFields: [(name: String, value: String)] = []
        for _ in 0..<reader.count() {
            let name = reader.string()
            requestFields.append((name, reader.string()))
        }
        var responseHeaders: [(name: String, value: String)] = []
        for _ in 0..<reader.count() {
            responseHeaders.append((reader.string(), reader.string()))
        }
        let scenario = extras?.scenario
        return JournalEntry(
            seq: seq,
            time: JournalEntry.timestamp(secondsSince1970: seconds, milliseconds: Int(nanoseconds / 1_000_000)),
            method: method,
            target: target,
            scenario: scenario?.scenario,
            run: scenario?.run,
            route: scenario?.route,
            attempt: scenario?.attempt,
            requestHeaders: JournalEntry.headerDictionary(requestFields),
            status: Int(status),
            responseHeaders: JournalEntry.headerDictionary(responseHeaders),
            bodyBytesPlanned: bodyBytesPlanned,
            bodyBytesSent: bodyBytesSent,
            outcome: outcome,
            faults: extras?.faults ?? [],
            connection: connection,
            peer: IncomingRequest.peerDescription(address: peerAddress, port: Int(peerPort)),
            arrival: arrival
        )
    }
}

/// The journal slots' text in one growable byte ring: slots are stored and dropped oldest first, so their text
/// is too, and the live text is always the one stretch between `start` and `end`.
///
/// Positions only grow; a position's byte lives at `position & (capacity - 1)`. Not thread-safe: the journal
/// uses it under its lock.
struct JournalText {
    private var storage: [UInt8] = []
    /// The position of the oldest live byte.
    private var start: UInt64 = 0
    /// The position after the newest byte.
    private(set) var end: UInt64 = 0

    /// Appends `bytes`, growing the ring (to a power of two) when they do not fit.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let live = Int(end - start)
        if live + bytes.count > storage.count {
            var capacity = max(storage.count, 64 * 1024)
            while capacity < live + bytes.count { capacity *= 2 }
            var grown = [UInt8](repeating: 0, count: capacity)
            grown.withUnsafeMutableBytes { target in
                copy(from: start, count: live, to: target, at: start)
            }
            storage = grown
        }
        storage.withUnsafeMutableBytes { target in
            let mask = UInt64(target.count - 1)
            var position = end
            var offset = 0
            while offset < bytes.count {
                let physical = Int(position & mask)
                let count = min(bytes.count - offset, target.count - physical)
                (target.baseAddress! + physical).copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
                offset += count
                position += UInt64(count)
            }
        }
        end += UInt64(bytes.count)
    }

    /// Hands the `count` bytes from `position` to `body`, in one piece or, where they wrap around the ring, two.
    func withBytes(from position: UInt64, count: Int, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard count > 0 else { return }
        storage.withUnsafeBytes { source in
            let physical = Int(position & UInt64(source.count - 1))
            let first = min(count, source.count - physical)
            body(UnsafeRawBufferPointer(rebasing: source[physical..<physical + first]))
            if first < count { body(UnsafeRawBufferPointer(rebasing: source[0..<count - first])) }
        }
    }

    /// Forgets every byte before `position`.
    mutating func release(upTo position: UInt64) {
        start = min(max(start, position), end)
    }

    /// Appends the `count` bytes from `position` to `output`.
    func copy(from position: UInt64, count: Int, appendingTo output: inout [UInt8]) {
        guard count > 0 else { return }
        let base = output.count
        output.append(contentsOf: repeatElement(0, count: count))
        output.withUnsafeMutableBytes { target in
            copy(from: position, count: count, to: UnsafeMutableRawBufferPointer(rebasing: target[base...]), at: 0)
        }
    }

    /// Copies `count` bytes from `position` of this ring to `target`, placing position `p` at
    /// `(p - position + targetPosition) & (target.count - 1)` when `targetPosition` is a ring position of a
    /// power-of-two `target`, or contiguously from 0 when `targetPosition` is 0 and `target` is large enough.
    private func copy(
        from position: UInt64, count: Int, to target: UnsafeMutableRawBufferPointer, at targetPosition: UInt64
    ) {
        storage.withUnsafeBytes { source in
            guard !source.isEmpty else { return }
            let sourceMask = UInt64(source.count - 1)
            let contiguous = targetPosition == 0 && target.count >= count
            let targetMask = contiguous ? UInt64.max : UInt64(target.count - 1)
            var done = 0
            while done < count {
                let from = Int((position + UInt64(done)) & sourceMask)
                let to = Int((targetPosition + UInt64(done)) & targetMask)
                let step = min(count - done, source.count - from, target.count - to)
                (target.baseAddress! + to).copyMemory(from: source.baseAddress! + from, byteCount: step)
                done += step
            }
        }
    }

    /// Encodes an exchange's text and hands it to `body`, from the stack when it is small: each string as its
    /// length (4 bytes) and UTF-8; method, target, peer address, then the request and the response headers,
    /// each list as its count (4 bytes) and name-value pairs.
    static func encode<Result>(
        request: IncomingRequest, responseHeaders: [(name: String, value: String)],
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        var size = 4 * 5 + request.method.utf8.count + request.target.utf8.count + request.peerAddress.utf8.count
        for field in request.headers { size += 8 + field.name.utf8.count + field.value.utf8.count }
        for field in responseHeaders { size += 8 + field.name.utf8.count + field.value.utf8.count }
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 4) { buffer in
            var writer = Writer(buffer: buffer)
            writer.string(request.method)
            writer.string(request.target)
            writer.string(request.peerAddress)
            writer.count(request.headers.count)
            for field in request.headers {
                writer.string(field.name)
                writer.string(field.value)
            }
            writer.count(responseHeaders.count)
            for field in responseHeaders {
                writer.string(field.name)
                writer.string(field.value)
            }
            return body(UnsafeRawBufferPointer(buffer))
        }
    }

    private struct Writer {
        let buffer: UnsafeMutableRawBufferPointer
        var offset = 0

        mutating func count(_ value: Int) {
            buffer.storeBytes(of: UInt32(truncatingIfNeeded: value), toByteOffset: offset, as: UInt32.self)
            offset += 4
        }

        mutating func string(_ text: String) {
            count(text.utf8.count)
            let start = buffer.baseAddress! + offset
            let copied = text.utf8.withContiguousStorageIfAvailable { bytes in
                if let source = bytes.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) }
                return bytes.count
            }
            if let copied {
                offset += copied
            } else {
                for byte in text.utf8 {
                    buffer[offset] = byte
                    offset += 1
                }
            }
        }
    }

    /// Reads what `encode` wrote.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func count() -> Int {
            let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            offset += 4
            return Int(value)
        }

        mutating func string() -> String {
            let length = count()
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
        }
    }
}
