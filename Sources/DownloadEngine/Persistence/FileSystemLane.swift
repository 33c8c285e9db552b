import Dispatch

/// One thread for the file-system calls that create and rename files in the state directory: a transfer's partial
/// file creation and its move into place (with the record append or save before it).
///
/// Creating, renaming and deleting names in one directory take that directory's inode lock exclusively, so from
/// several threads they run one at a time anyway; the threads that wait spin in the kernel while the holder runs
/// (`rwsem_spin_on_owner`), and ext4 without a journal holds the lock through a scan of the inode bitmap that grows
/// with every file deleted in the last few minutes (`recently_deleted`). Made on the Swift concurrency pool, which has
/// one thread per core, these calls left the pool with no thread for the other transfers' work while one thread
/// created a file and another spun behind it. On this lane they queue in user space instead, and the pool stays free
/// (docs/benchmarks.md, case 6).
final class FileSystemLane: Sendable {
    private let queue = DispatchQueue(label: "rangefetch.file-system")

    /// Runs `body` on the lane, after every body submitted before, and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
