#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a staged exchange sits, with the key the merge sorts by: end time, then arrival.
struct StagedPosition: Comparable {
    var seconds: Int64
    var nanoseconds: Int32
    var arrival: Int
    var shard: Int32
    var index: Int32

    static func < (left: StagedPosition, right: StagedPosition) -> Bool {
        (left.seconds, left.nanoseconds, left.arrival) < (right.seconds, right.nanoseconds, right.arrival)
    }

    static func == (left: StagedPosition, right: StagedPosition) -> Bool {
        (left.seconds, left.nanoseconds, left.arrival) == (right.seconds, right.nanoseconds, right.arrival)
    }
}

/// The journal's staging: per shard, exchanges recorded by the threads that use it, not yet in the ring.
///
/// Every shard lives in one block of memory, `stride` bytes apart, its lock on one cache line and its counters on
/// the next: both are written by the shard's thread on every request, and when shards were separate small objects
/// allocated one after another, one shard's lock could share a cache line with the next one's, which two threads on
/// two cores then kept taking from each other. The lock is a `pthread_mutex_t`, not `Synchronization.Mutex`:
/// ThreadSanitizer sees the order a pthread mutex gives, while `Mutex` waits on a futex of its own that it cannot
/// see, so every merge of the shards would be reported as a race (see docs/reliability.md).
///
/// Each shard has a spare buffer, which only the merger touches: a merge swaps a shard's buffer for its empty spare
/// under the shard's lock and sorts and copies the exchanges after releasing it, so an appender waits for a swap at
/// most, never for a whole merge (which held every shard's lock while it copied up to `count` × `slotCapacity`
/// exchanges, stalling every pool thread that finished a request meanwhile).
///
/// `@unchecked Sendable`: a shard's buffer is read or written only under its lock, and the spares only by the
/// merger, under the journal's lock.
final class StagingShards: @unchecked Sendable {
    /// One shard's staged exchanges.
    struct Shard {
        /// An empty buffer with room for `slotCapacity` slots.
        init(slotCapacity: Int) {
            self.slotCapacity = slotCapacity
            slots = .allocate(capacity: slotCapacity)
            // Room for a full shard of typical exchanges (a few hundred bytes of text each), so that the text grows
            // only for unusually large headers; untouched pages of a shard no thread uses cost nothing.
            textCapacity = slotCapacity * 512
            text = .allocate(byteCount: textCapacity, alignment: 16)
        }

        /// Frees the buffer's storage; it must not be used afterwards.
        func deallocate() {
            slots.deallocate()
            text.deallocate()
        }

        /// Room for `slotCapacity` slots; a staged slot's `textStart` is an offset in `text`, and its `seq` the index
        /// of its extras in `extras` (it gets its number only in the ring).
        let slots: UnsafeMutablePointer<JournalSlot>
        var count = 0
        /// The staged slots' text, back to back in staging order.
        var text: UnsafeMutableRawPointer
        var textCount = 0
        var textCapacity: Int
        var extras: [JournalSlot.Extras] = []
        let slotCapacity: Int

        /// Makes room for `size` more bytes of text.
        mutating func reserveText(_ size: Int) {
            guard textCount + size > textCapacity else { return }
            var capacity = textCapacity * 2
            while capacity < textCount + size { capacity *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            grown.copyMemory(from: text, byteCount: textCount)
            text.deallocate()
            text = grown
            textCapacity = capacity
        }

        /// Stages `slot` for `exchange`, encoding the exchange's text straight into the shard's; returns whether the
        /// shard is full now, or nil, staging nothing, when it already was (the caller stores the staged exchanges,
        /// which empties the shards, and stages again).
        ///
        /// Under the shard's lock, which is seldom contended (a merge takes it from another thread, and threads beyond
        /// the shard count share shards), so encoding here costs no waiting and saves copying the text from a buffer of
        /// its own.
        mutating func stage(_ slot: JournalSlot, of exchange: CompletedExchange, extras: JournalSlot.Extras?) -> Bool? {
            // Full: another thread of this shard filled it and has not stored it yet (it waits for the journal's lock).
            // Staging now wrote a slot past the end of `slots`, corrupting the heap (the test process, with hundreds
            // of threads on eight shards, crashed in malloc now and then).
            guard count < slotCapacity else { return nil }
            // `exchange.request` and `exchange.plan.headers` are used in place: a local copy of the request retained
            // and released every string in it.
            let size = JournalText.encodedSize(request: exchange.request, responseHeaders: exchange.plan.headers)
            reserveText(size)
            JournalText.encode(
                request: exchange.request, responseHeaders: exchange.plan.headers, into: text + textCount)
            var slot = slot
            slot.textStart = UInt64(textCount)
            slot.textLength = UInt32(size)
            if let extras {
                slot.seq = self.extras.count
                self.extras.append(extras)
            }
            (slots + count).initialize(to: slot)
            count += 1
            textCount += size
            return count >= slotCapacity
        }

        /// Forgets every staged exchange, keeping the storage.
        mutating func removeAll() {
            count = 0
            textCount = 0
            if !extras.isEmpty { extras.removeAll(keepingCapacity: true) }
        }
    }

    /// How many shards there are.
    let count: Int
    /// Bytes from one shard to the next: the lock's line and the state's (a pair of lines, for CPUs that fetch
    /// lines in pairs).
    private static let stride = 128
    /// Where a shard's state starts in its stretch, after the lock's line.
    private static let stateOffset = 64
    private let block: UnsafeMutableRawPointer
    /// Each shard's spare buffer, empty between merges: touched only by the merger, under the journal's lock.
    private let spares: UnsafeMutablePointer<Shard>

    /// Makes `count` empty shards with room for `slotCapacity` slots each.
    init(count: Int, slotCapacity: Int) {
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.stateOffset)
        precondition(Self.stateOffset + MemoryLayout<Shard>.size <= Self.stride)
        self.count = count
        block = UnsafeMutableRawPointer.allocate(byteCount: count * Self.stride, alignment: Self.stride)
        spares = .allocate(capacity: count)
        for index in 0..<count {
            let mutex = (block + index * Self.stride).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            (block + index * Self.stride + Self.stateOffset).bindMemory(to: Shard.self, capacity: 1).initialize(
                to: Shard(slotCapacity: slotCapacity))
            (spares + index).initialize(to: Shard(slotCapacity: slotCapacity))
        }
    }

    deinit {
        for index in 0..<count {
            shard(index).pointee.deallocate()
            shard(index).deinitialize(count: 1)
            spares[index].deallocate()
            pthread_mutex_destroy(mutex(index))
        }
        spares.deinitialize(count: count)
        spares.deallocate()
        block.deallocate()
    }

    private func mutex(_ index: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (block + index * Self.stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    private func shard(_ index: Int) -> UnsafeMutablePointer<Shard> {
        (block + index * Self.stride + Self.stateOffset).assumingMemoryBound(to: Shard.self)
    }

    /// Runs `body` with shard `index` locked.
    func withShardLocked<Result>(_ index: Int, _ body: (UnsafeMutablePointer<Shard>) -> Result) -> Result {
        pthread_mutex_lock(mutex(index))
        defer { pthread_mutex_unlock(mutex(index)) }
        return body(shard(index))
    }

    /// Takes every shard's staged exchanges, leaving each shard its empty spare buffer, runs `body` with the taken
    /// buffers (one per shard, in shard order), and empties them to be the next spares. Only under the journal's
    /// lock: the caller must be the only merger.
    func withStagedExchangesTaken(_ body: (UnsafeMutableBufferPointer<Shard>) -> Void) {
        for index in 0..<count {
            pthread_mutex_lock(mutex(index))
            if shard(index).pointee.count > 0 { swap(&shard(index).pointee, &spares[index]) }
            pthread_mutex_unlock(mutex(index))
        }
        body(UnsafeMutableBufferPointer(start: spares, count: count))
        for index in 0..<count { spares[index].removeAll() }
    }
}
