import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The advisory lock that makes one engine at a time the user of a state directory: `flock(LOCK_EX | LOCK_NB)` on
/// `STATE/lock`, which holds the holder's PID.
///
/// Two engines on one directory would download into the same partial files and overwrite each other's records.
/// `flock` rather than a PID file alone: the kernel drops the lock with the last descriptor of its open file
/// description, so a process killed with SIGKILL leaves no stale lock, and a second `open` in the same process is a
/// second description, so a second engine in the same process is refused too. Advisory only: it keeps out engines
/// and `rangefetch`, not other programs, and on a network file system it is only as good as the file system's
/// `flock` (NFS emulates it with byte-range locks; some file systems accept it without locking anything).
final class StateDirectoryLock: @unchecked Sendable {
    /// The lock file's name inside the state directory.
    static let fileName = "lock"

    /// The lock file's absolute path.
    let path: String
    // NSLock rather than Synchronization.Mutex: ThreadSanitizer sees it (docs/reliability.md). It guards
    // `descriptor`, which `release()` may clear from the engine while `deinit` runs later on any thread.
    private let mutex = NSLock()
    private var descriptor: Int32?

    /// Takes the lock on `directory` without waiting and writes this process's PID into the lock file.
    ///
    /// The lock file is created if absent; when the lock is held elsewhere nothing is written to it, so the holder's
    /// PID stays for the next one to read.
    ///
    /// - Parameter directory: The absolute state directory, which exists.
    /// - Throws: ``DownloadError/stateDirectoryLocked(_:by:)`` naming the holder's PID when another open file
    ///   description holds the lock; ``DownloadError/fileSystem(_:)`` when the lock file cannot be opened, locked
    ///   or written.
    init(directory: String) throws {
        path = directory + "/" + Self.fileName
        // No O_TRUNC: the file may hold the current holder's PID. O_CLOEXEC: a child process must not inherit the
        // description and with it the lock.
        let fd = try FileIO.open(path, O_RDWR | O_CREAT | O_CLOEXEC)
        // A lock released a moment ago may still be held for a moment: a process that forked while it held the lock
        // shares the lock's open file description with the child until the child's exec closes it (a clean-clone
        // CI run refused an engine started right after another's shutdown this way). Half a second of retries
        // outlasts that window; a real holder is still refused.
        var code = FileIO.errnoOf("flock", { flock(fd, LOCK_EX | LOCK_NB) })
        var retries = 0
        while code == EWOULDBLOCK, retries < 50 {
            usleep(10_000)
            retries += 1
            code = FileIO.errnoOf("flock", { flock(fd, LOCK_EX | LOCK_NB) })
        }
        if let code {
            let holder = code == EWOULDBLOCK ? Self.readHolder(fd, path) : nil
            FileIO.close(fd)
            guard code == EWOULDBLOCK else {
                throw DownloadError.fileSystem("flock(\(path)): \(String(cString: strerror(code)))")
            }
            throw DownloadError.stateDirectoryLocked(directory, by: holder)
        }
        do {
            try FileIO.truncate(fd, path, to: 0)
            let line = Array("\(getpid())\n".utf8)
            try line.withUnsafeBytes { try FileIO.writeAll(fd, path, $0, at: 0) }
        } catch {
            FileIO.close(fd)
            throw error
        }
        descriptor = fd
    }

    /// Releases the lock: empties the lock file (a PID there names a running holder, or a killed one) and closes it.
    /// Does nothing the second time.
    func release() {
        guard
            let fd = mutex.withLock({ () -> Int32? in
                defer { descriptor = nil }
                return descriptor
            })
        else { return }
        try? FileIO.truncate(fd, path, to: 0)
        FileIO.close(fd)
    }

    deinit { release() }

    /// The PID in the lock file, or `nil` when it has none yet: the holder writes it just after taking the lock.
    private static func readHolder(_ fd: Int32, _ path: String) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard let count = try? bytes.withUnsafeMutableBytes({ try FileIO.read(fd, path, into: $0, at: 0) }) else {
            return nil
        }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
