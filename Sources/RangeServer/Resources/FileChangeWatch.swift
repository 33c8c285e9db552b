import NIOConcurrencyHelpers
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``RepresentationCache`` learns from the kernel about changes to the files it holds, so that a hit on a file
/// nothing touched since its last `stat` needs no `stat` of its own: on the bench machine the `stat` cost 1.1-1.4 µs
/// of the 22 µs a small HTTP/2 range request costs, a read of an empty queue 0.37 (docs/benchmarks.md, case 11).
///
/// On Linux one inotify queue watches each cached file and every directory from the served root down to it, for
/// every change that can alter what a path names or its size and modification time: a write or truncation, an
/// attribute change, a name created, deleted or renamed in one of the directories, a directory moved or deleted.
/// ``changes()`` reads whatever the queue holds and moves its count on when there was anything. The kernel queues an
/// event within the system call that made the change, so a change made before a request arrived is in the queue
/// before the request is read: an entry found unchanged by `stat` at some count is still what its path names while
/// the count stays the same. The count moving on says only that something watched changed; entries are then checked
/// by `stat` again, one by one, as they are hit.
///
/// Nothing is watched off Linux, below a root not open as a directory, through a symlink, or on a file system whose
/// changes can come from elsewhere (NFS, FUSE, ...; ``SystemCalls/isOnLocalFileSystem(_:)``): those entries keep a
/// `stat` on every hit. At most ``watchLimit`` watches are held (each uses a share of the user's inotify quota);
/// past it the queue is closed, which drops them all and starts a new ``generation``, and entries watched before it
/// are checked by `stat` on every hit until they are stored again.
final class FileChangeWatch: Sendable {
    /// The most watches held at once, directories included.
    let watchLimit: Int

    private struct State {
        /// The inotify queue, opened by the first watch; -1 before it.
        var queue: Int32 = -1
        /// How many times the queue held something when read, or was closed.
        var count: UInt64 = 0
        /// Which queue: moves on each time the queue is closed.
        var generation: UInt64 = 0
        /// The watch descriptors the queue returned, to count them (the kernel gives an inode watched twice its
        /// first descriptor again).
        var watches: Set<Int32> = []
        /// Set when a queue could not be opened (no inotify, or the user's instances are all taken): nothing is
        /// watched from then on.
        var unavailable = false
        /// When the last read of this queue began: every change made before then is in `count`.
        var drainedFrom: ContinuousClock.Instant?
    }

    private let state = NIOLockedValueBox(State())

    init(watchLimit: Int) {
        self.watchLimit = watchLimit
    }

    deinit {
        let queue = state.withLockedValue { $0.queue }
        if queue >= 0 { _ = close(queue) }
    }

    /// The change count and queue generation after reading everything queued so far.
    ///
    /// - Parameter readBy: when the caller's request had been read from its socket, if it knows. A read of the queue
    ///   that began after then already counted every change made before the request arrived, so its count is
    ///   returned without another read: the HTTP/2 front end passes the moment its latest socket read had returned
    ///   (`SocketReadClock`), so the many requests of one read cost one read of the queue, not one each (about 3 % of
    ///   the server's CPU in scripts/bench case 11, with the lock the reads were taken under).
    func changes(readBy: ContinuousClock.Instant? = nil) -> (count: UInt64, generation: UInt64) {
        state.withLockedValue { state in
            if let readBy, let drainedFrom = state.drainedFrom, drainedFrom >= readBy {
                return (state.count, state.generation)
            }
            // Taken before the read: a change made while it runs may be missed by it, and must not count as read.
            let began = ContinuousClock.now
            Self.drain(&state)
            if state.queue >= 0 { state.drainedFrom = began }
            return (state.count, state.generation)
        }
    }

    /// Watches the regular file open as `file`, which `relativePath` (symlink-free, components joined by `/`) names
    /// below the open directory `root`, and every directory from the root down to it.
    ///
    /// - Returns: the queue generation the watches belong to, or nil when nothing could be watched (the entry must
    ///   then be checked by `stat` on every hit).
    func watch(relativePath: String, root: Int32, file: Int32) -> UInt64? {
        #if os(Linux)
        guard root >= 0, isOnLocalFileSystem(file) else { return nil }
        return state.withLockedValue { state -> UInt64? in
            guard !state.unavailable else { return nil }
            if state.watches.count >= watchLimit { Self.closeQueue(&state) }
            if state.queue < 0 {
                state.queue = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
                guard state.queue >= 0 else {
                    state.unavailable = true
                    return nil
                }
            }
            // Through the open root, so the watches follow the directory the server serves whatever its path now.
            let base = "/proc/self/fd/\(root)"
            var directory = base
            guard Self.add(directory, mask: Self.directoryEvents, to: &state) else { return nil }
            for component in relativePath.split(separator: "/").dropLast() {
                directory += "/" + component
                guard Self.add(directory, mask: Self.directoryEvents, to: &state) else { return nil }
            }
            guard Self.add(base + "/" + relativePath, mask: Self.fileEvents, to: &state) else { return nil }
            return state.generation
        }
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// A file's own changes: its bytes, its attributes (modification time, link count), the file moved or deleted.
    private static let fileEvents = UInt32(IN_MODIFY | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF | IN_DONT_FOLLOW)
    /// A directory's names: created, deleted, renamed in or out (a file replaced by `rename` is one of these), and the
    /// directory itself moved or deleted.
    /// (The root is named by its `/proc/self/fd` link, which must be followed.)
    private static let directoryEvents = UInt32(
        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)

    private static func add(_ path: String, mask: UInt32, to state: inout State) -> Bool {
        let watch = inotify_add_watch(state.queue, path, mask)
        guard watch >= 0 else { return false }
        state.watches.insert(watch)
        return true
    }
    #endif

    private static func drain(_ state: inout State) {
        guard state.queue >= 0 else { return }
        var changed = false
        // Room for any one event (16 bytes and a name of at most 255), so a read never fails for want of it.
        let queue = state.queue
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            while true {
                do throws(SystemCallError) {
                    // `systemCall` repeats an interrupted read; a queue's read never returns 0.
                    guard try systemCall("read", { read(queue, buffer.baseAddress, buffer.count) }) > 0 else { break }
                    changed = true
                } catch {
                    // EAGAIN: empty. Any other failure is taken as a change, which costs only a `stat` per entry.
                    if error.errno != .resourceTemporarilyUnavailable { changed = true }
                    break
                }
            }
        }
        if changed { state.count &+= 1 }
    }

    private static func closeQueue(_ state: inout State) {
        if state.queue >= 0 { _ = close(state.queue) }
        state.queue = -1
        state.watches.removeAll()
        state.count &+= 1
        state.generation &+= 1
        state.drainedFrom = nil
    }
}
