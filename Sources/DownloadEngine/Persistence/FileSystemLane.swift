import Dispatch
import Synchronization

/// One file-system call at a time for the calls that create and rename files in the state directory: a transfer's
/// partial file creation and its move into place (with the record append or save before it).
///
/// Creating, renaming and deleting names in one directory take that directory's inode lock exclusively, so from
/// several threads they run one at a time anyway; the threads that wait spin in the kernel while the holder runs
/// (`rwsem_spin_on_owner`), and ext4 without a journal holds the lock through a scan of the inode bitmap that grows
/// with every file deleted in the last few minutes (`recently_deleted`). Made on the Swift concurrency pool, which has
/// one thread per core, these calls left the pool with no thread for the other transfers' work while one thread
/// created a file and another spun behind it (docs/benchmarks.md, case 6).
///
/// So a call never waits on the pool: when no other lane call is running, the caller makes it at once on its own
/// thread; when one is, it queues on the lane's own thread, in user space, and the pool stays free. Most calls find
/// the lane free (a few tens of microseconds each), and making them in place saves the two thread wake-ups of a trip
/// to the lane's thread and back, per call.
final class FileSystemLane: Sendable {
    private let queue = DispatchQueue(label: "rangefetch.file-system")
    /// Held by whichever thread makes a lane call: a caller that finds it free, or the lane's thread.
    private let running = Mutex<Void>(())

    /// Runs `body` alone among the lane's calls, on the calling thread when the lane is free, else on the lane's
    /// thread after the calls queued before it; returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        if let result = running.withLockIfAvailable({ _ in Result { try body() } }) {
            return try result.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                continuation.resume(with: running.withLock { _ in Result { try body() } })
            }
        }
    }
}
