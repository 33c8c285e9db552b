import Foundation

/// The state directory's task log (`tasks.jsonl`): appended to through one descriptor kept open for the engine's
/// lifetime, replaced whole (atomically) when tasks are dropped from it.
///
/// A small task appends two lines (its validators, then its completed record). Opening the log for each line cost
/// an `open` with `O_CREAT` per line, which takes the state directory's inode lock exclusively, the same lock the
/// other tasks' partial-file creations and renames take: with 500 small files that contention was CPU spent
/// spinning (docs/benchmarks.md, case 6). The descriptor is reopened after every rewrite, which replaces the file.
/// One writer per state directory is assumed (``StateDirectoryLock``): another process's rewrite would leave this
/// descriptor on the replaced file.
final class TaskLog: @unchecked Sendable {
    /// The log's absolute path.
    let path: String
    private let syncsToDisk: Bool
    // NSLock rather than Synchronization.Mutex: ThreadSanitizer sees it (docs/reliability.md). It orders appends
    // and rewrites, and guards `descriptor`.
    private let mutex = NSLock()
    /// The open log, `O_APPEND`; `nil` until the first append and after each rewrite.
    private var descriptor: Int32?

    init(path: String, syncsToDisk: Bool) {
        self.path = path
        self.syncsToDisk = syncsToDisk
    }

    deinit {
        if let descriptor { FileIO.close(descriptor) }
    }

    /// Appends one line, whole: with `O_APPEND` each `write` lands at the end. With `syncsToDisk` the log and its
    /// directory entry are flushed too.
    func append(_ line: [UInt8]) throws {
        try mutex.withLock {
            let fd: Int32
            let opened: Bool
            if let descriptor {
                fd = descriptor
                opened = false
            } else {
                fd = try FileIO.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC)
                descriptor = fd
                opened = true
            }
            // With O_APPEND the offset is ignored.
            try line.withUnsafeBytes { try FileIO.writeAll(fd, path, $0, at: 0) }
            if syncsToDisk {
                try FileIO.fsync(fd, path)
                // The directory entry is new only when this call may have created the file.
                if opened { try FileIO.fsyncDirectory(LexicalPath.parent(path)) }
            }
        }
    }

    /// Replaces the log with `lines` (each without its newline), atomically; later appends go to the new file.
    func rewrite(_ lines: [[UInt8]]) throws {
        try mutex.withLock {
            if let descriptor {
                FileIO.close(descriptor)
                self.descriptor = nil
            }
            try FileIO.atomicWrite(lines.flatMap { $0 + [0x0A] }, to: path, sync: syncsToDisk)
        }
    }

    /// The log's lines, without their newlines; none when there is no log.
    func lines() throws -> [[UInt8]] {
        try mutex.withLock {
            guard FileIO.exists(path) else { return [] }
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return data.split(separator: 0x0A, omittingEmptySubsequences: true).map { Array($0) }
        }
    }
}
