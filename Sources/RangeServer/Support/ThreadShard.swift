import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread's shard number, for structures split so that each pool thread keeps to its own part
/// (the representation cache, the journal's staging): handed out in turn on a thread's first call, then kept in a
/// thread-specific slot. Callers reduce it modulo their shard count.
func threadShardIndex() -> Int {
    if let stored = pthread_getspecific(shardSlot.key) { return Int(bitPattern: stored) - 1 }
    let index = shardSlot.next.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
    pthread_setspecific(shardSlot.key, UnsafeRawPointer(bitPattern: index + 1))
    return index
}

/// The thread-specific slot behind `threadShardIndex()` and the next number to hand out.
private let shardSlot = ShardSlot()

private final class ShardSlot: Sendable {
    let key: pthread_key_t
    let next = Atomic<Int>(0)

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }
}
