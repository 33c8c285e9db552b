#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One journal entry as the ring keeps it: the numbers inline, the text in the journal's `JournalText`.
///
/// A slot is a trivial value, with no reference in it: storing, staging, sorting and overwriting slots copies bytes
/// and never retains or releases (dropping a 100,000-requests-old entry used to free half a dozen cold objects per
/// request, and a slot's one optional reference still cost an outlined copy and destroy at each move). The rare
/// `Extras` of a slot live beside the ring, keyed by `seq` (see `Journal`), and `hasExtras` says whether to look.
/// `BitwiseCopyable` keeps it so: the staging buffers hold slots in raw memory that is never deinitialized.
struct JournalSlot: Sendable, BitwiseCopyable {
    /// What few exchanges carry (faults, a scenario), or a whole entry given to `Journal.append(_:)`.
    final class Extras: Sendable {
        let faults: [String]
        let scenario: ScenarioContext?
        /// With `probability`: whether the faults applied.
        let faultsApplied: Bool?
        /// What ALPN chose and what the client offered (TLS connections of the HTTP/2 listener).
        let alpn: String?
        let alpnOffered: [String]?
        /// Set for entries appended as `JournalEntry` values; the slot's numbers and text are unused then.
        let entry: JournalEntry?

        init(
            faults: [String], scenario: ScenarioContext?, faultsApplied: Bool?, alpn: String? = nil,
            alpnOffered: [String]? = nil
        ) {
            self.faults = faults
            self.scenario = scenario
            self.faultsApplied = faultsApplied
            self.alpn = alpn
            self.alpnOffered = alpnOffered
            self.entry = nil
        }

        init(entry: JournalEntry) {
            self.faults = []
            self.scenario = nil
            self.faultsApplied = nil
            self.alpn = nil
            self.alpnOffered = nil
            self.entry = entry
        }

        /// The scenario run the entry belongs to, if any.
        var run: String? { entry?.run ?? scenario?.run }

        /// The scenario the entry belongs to, if any.
        var scenarioName: String? { entry?.scenario ?? scenario?.scenario }
    }

    // The eight-byte fields first and the narrow ones packed after them: 80 bytes a slot.

    /// The sequence number; while the slot is staged, the index of its extras in the shard's list instead.
    var seq: Int
    /// When the response ended: whole seconds since 1970 and the nanoseconds after them (the entry shows
    /// milliseconds; the finer value orders exchanges staged on different threads).
    var seconds: Int64
    var bodyBytesPlanned: UInt64
    var bodyBytesSent: UInt64
    var connection: Int
    var arrival: Int
    /// When the request's headers arrived, in nanoseconds since 1970.
    var arrivalTime: Int64
    /// Where the slot's text starts in `JournalText` (a position that only grows) and how long it is.
    var textStart: UInt64
    var textLength: UInt32
    var nanoseconds: Int32
    var status: Int32
    var peerPort: UInt16
    var outcome: JournalOutcome
    /// Whether the slot has `Extras` (kept outside the slot, so that the slot stays trivial).
    var hasExtras: Bool
    /// Whether the request came in on a TLS port.
    var tls = false
    /// Whether the client left the response of its own accord (see `JournalEntry.abandoned`).
    var abandoned = false
    /// Whether the exchange came over HTTP/2.
    var http2 = false
    /// The HTTP/2 stream id; 0 over HTTP/1.1.
    var stream: UInt32 = 0

    init(
        seq: Int, seconds: Int64, nanoseconds: Int32, status: Int32, outcome: JournalOutcome, peerPort: UInt16,
        bodyBytesPlanned: UInt64, bodyBytesSent: UInt64, connection: Int, arrival: Int, arrivalTime: Int64 = 0,
        textStart: UInt64, textLength: UInt32, hasExtras: Bool
    ) {
        self.seq = seq
        self.seconds = seconds
        self.bodyBytesPlanned = bodyBytesPlanned
        self.bodyBytesSent = bodyBytesSent
        self.connection = connection
        self.arrival = arrival
        self.arrivalTime = arrivalTime
        self.textStart = textStart
        self.textLength = textLength
        self.nanoseconds = nanoseconds
        self.status = status
        self.peerPort = peerPort
        self.outcome = outcome
        self.hasExtras = hasExtras
    }

    /// A slot for an entry appended as a value; it has no text of its own, and its extras hold the entry.
    init(entry: JournalEntry, textStart: UInt64) {
        self.init(
            seq: entry.seq, seconds: 0, nanoseconds: 0, status: 0, outcome: entry.outcome, peerPort: 0,
            bodyBytesPlanned: 0, bodyBytesSent: 0, connection: 0, arrival: 0, textStart: textStart, textLength: 0,
            hasExtras: true)
    }

    /// The entry, formatted from the slot, its text (as `JournalText.encode` wrote it) and its extras.
    func entry(text: UnsafeRawBufferPointer, extras: Extras?) -> JournalEntry {
        if let entry = extras?.entry { return entry }
        var reader = JournalText.Reader(bytes: text)
        let method = reader.string()
        let target = reader.string()
        let peerAddress = reader.string()
        var requestFields: [JournalEntry.Field] = []
        for _ in 0..<reader.count() {
            let name = reader.string()
            requestFields.append(JournalEntry.Field(name: name, value: reader.string()))
        }
        var responseFields: [JournalEntry.Field] = []
        for _ in 0..<reader.count() {
            let name = reader.string()
            responseFields.append(JournalEntry.Field(name: name, value: reader.string()))
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
            requestHeaders: JournalEntry.headerDictionary(requestFields.map { ($0.name, $0.value) }),
            status: Int(status),
            responseHeaders: JournalEntry.headerDictionary(responseFields.map { ($0.name, $0.value) }),
            bodyBytesPlanned: bodyBytesPlanned,
            bodyBytesSent: bodyBytesSent,
            outcome: outcome,
            faults: extras?.faults ?? [],
            connection: connection,
            peer: IncomingRequest.peerDescription(address: peerAddress, port: Int(peerPort)),
            arrival: arrival,
            arrivalTime: Self.timestamp(nanosecondsSince1970: arrivalTime),
            faultsApplied: extras?.faultsApplied,
            tls: tls, abandoned: abandoned, requestHeaderList: requestFields, responseHeaderList: responseFields,
            httpProtocol: http2 ? "h2" : "h1", stream: http2 ? Int(stream) : nil, alpn: extras?.alpn,
            alpnOffered: extras?.alpnOffered
        )
    }

    /// `JournalEntry.timestamp` for a time in nanoseconds since 1970.
    static func timestamp(nanosecondsSince1970 time: Int64) -> String {
        // Floor division, so a time before 1970 keeps its milliseconds positive.
        let (seconds, rest) = time.quotientAndRemainder(dividingBy: 1_000_000_000)
        let (wholeSeconds, nanoseconds) = rest < 0 ? (seconds - 1, rest + 1_000_000_000) : (seconds, rest)
        return JournalEntry.timestamp(secondsSince1970: wholeSeconds, milliseconds: Int(nanoseconds / 1_000_000))
    }
}

/// The journal slots' text in one growable byte ring: slots are stored and dropped oldest first, so their text
/// is too, and the live text is always the one stretch between `start` and `end`.
///
/// Positions only grow; a position's byte lives at `position & (capacity - 1)`. Raw memory rather than an array so
/// that growing does not first zero the new storage (which cost more than the copy). Not thread-safe: the journal
/// uses it only under its lock, hence `@unchecked Sendable`.
final class JournalText: @unchecked Sendable {
    /// The ring's bytes, `capacity` of them: 0 or a power of two.
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    /// The position of the oldest live byte.
    private var start: UInt64 = 0
    /// The position after the newest byte.
    private(set) var end: UInt64 = 0

    deinit { storage?.deallocate() }

    /// Appends `count` bytes from `bytes`, growing the ring (to a power of two) when they do not fit.
    func append(_ bytes: UnsafeRawPointer, count: Int) {
        let live = Int(end - start)
        if live + count > capacity { grow(toFit: live + count) }
        if count > 0 { Self.write(bytes, count: count, at: end, into: storage!, capacity: capacity) }
        end += UInt64(count)
    }

    /// Appends `bytes`.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        append(base, count: bytes.count)
    }

    /// Forgets every byte before `position`.
    func release(upTo position: UInt64) {
        start = min(max(start, position), end)
    }

    /// Appends the `count` bytes from `position` to `output`.
    func copy(from position: UInt64, count: Int, appendingTo output: inout [UInt8]) {
        forEachPiece(from: position, count: count) { piece, _, length in
            output.append(contentsOf: UnsafeRawBufferPointer(start: piece, count: length))
        }
    }

    /// Moves to storage of at least `needed` bytes; every live byte keeps its position.
    private func grow(toFit needed: Int) {
        var grownCapacity = max(capacity, 64 * 1024)
        while grownCapacity < needed { grownCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: grownCapacity, alignment: 16)
        forEachPiece(from: start, count: Int(end - start)) { piece, offset, length in
            Self.write(piece, count: length, at: start + UInt64(offset), into: grown, capacity: grownCapacity)
        }
        storage?.deallocate()
        storage = grown
        capacity = grownCapacity
    }

    /// Calls `body` with the `count` bytes from `position`: each contiguous piece (one, or two where they wrap
    /// around the ring), its offset from `position`, and its length.
    private func forEachPiece(
        from position: UInt64, count: Int, _ body: (UnsafeRawPointer, _ offset: Int, _ length: Int) -> Void
    ) {
        guard count > 0, let storage else { return }
        let physical = Int(position & UInt64(capacity - 1))
        let first = min(count, capacity - physical)
        body(storage + physical, 0, first)
        if first < count { body(storage, first, count - first) }
    }

    /// Copies `count` bytes to ring `position` of the `capacity`-byte ring at `ring`, wrapping around its end.
    private static func write(
        _ bytes: UnsafeRawPointer, count: Int, at position: UInt64, into ring: UnsafeMutableRawPointer, capacity: Int
    ) {
        let physical = Int(position & UInt64(capacity - 1))
        let first = min(count, capacity - physical)
        (ring + physical).copyMemory(from: bytes, byteCount: first)
        if first < count { ring.copyMemory(from: bytes + first, byteCount: count - first) }
    }

    /// The length of the text `encode(request:responseHeaders:into:)` writes for an exchange.
    static func encodedSize(request: IncomingRequest, responseHeaders: [HeaderField]) -> Int {
        var measurer = Measurer()
        walk(request: request, responseHeaders: responseHeaders, &measurer)
        return measurer.size
    }

    /// Writes an exchange's text at `target`, which has room for `encodedSize(request:responseHeaders:)` bytes:
    /// each string as its length (4 bytes) and UTF-8; method, target, peer address, then the request and the
    /// response headers, each list as its count (4 bytes) and name-value pairs.
    static func encode(
        request: IncomingRequest, responseHeaders: [HeaderField], into target: UnsafeMutableRawPointer
    ) {
        var writer = Writer(cursor: target)
        walk(request: request, responseHeaders: responseHeaders, &writer)
    }

    /// Hands an exchange's strings and counts to `sink` in the order of the text's layout (see `encode`).
    @inline(__always)
    fileprivate static func walk<Sink: FieldSink>(
        request: IncomingRequest, responseHeaders: [HeaderField], _ sink: inout Sink
    ) {
        sink.string(request.method)
        sink.string(request.target)
        sink.string(request.peerAddress)
        sink.count(request.headers.count)
        for field in request.headers {
            sink.string(field.name)
            sink.string(field.value)
        }
        sink.count(responseHeaders.count)
        for field in responseHeaders {
            sink.string(field.name)
            sink.string(field.value)
        }
    }

    /// Adds up the text's length.
    private struct Measurer: FieldSink {
        var size = 0

        @inline(__always)
        mutating func count(_ value: Int) { size += 4 }

        @inline(__always)
        mutating func string(_ text: String) { size += 4 + text.utf8.count }
    }

    /// Writes the text.
    private struct Writer: FieldSink {
        var cursor: UnsafeMutableRawPointer

        @inline(__always)
        mutating func count(_ value: Int) {
            // Unaligned: a count follows a string of any length.
            cursor.storeBytes(of: UInt32(truncatingIfNeeded: value), as: UInt32.self)
            cursor += 4
        }

        /// Inlined into the walk: as a call of its own, per string, it cost more than the copy.
        @inline(__always)
        mutating func string(_ text: String) {
            let utf8 = text.utf8
            count(utf8.count)
            let target = cursor
            let copied = utf8.withContiguousStorageIfAvailable { bytes in
                if let source = bytes.baseAddress { target.copyMemory(from: source, byteCount: bytes.count) }
                return bytes.count
            }
            if let copied {
                cursor += copied
            } else {
                for byte in utf8 {
                    cursor.storeBytes(of: byte, as: UInt8.self)
                    cursor += 1
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

/// What `JournalText.walk` hands an exchange's text to, in layout order.
private protocol FieldSink {
    /// A list's count.
    mutating func count(_ value: Int)
    /// A string.
    mutating func string(_ text: String)
}
