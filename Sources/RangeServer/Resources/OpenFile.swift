import CMicroHTTPD
import NIOConcurrencyHelpers
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open regular file below the root, shared by every response that reads it.
///
/// Bodies are read with `pread`, which carries its own offset, so one descriptor serves concurrent responses.
/// The descriptor is closed when the last holder lets go (the cache, or a response still sending), so no
/// response can ever read through a descriptor number that was closed and reused for another file meanwhile.
final class OpenFile: Sendable, Hashable {
    /// The real path the file was opened by, for the digest cache key and messages.
    let path: String
    /// The descriptor, open read-only for the lifetime of this object.
    let descriptor: Int32
    /// What the file was when it was opened; a path whose `stat` still matches names these bytes.
    let identity: FileIdentity

    private init(path: String, descriptor: Int32, identity: FileIdentity) {
        self.path = path
        self.descriptor = descriptor
        self.identity = identity
    }

    deinit { _ = close(descriptor) }

    /// Opens the regular file at `realPath`, which must be `rootPath` + "/" + a symlink-free relative path.
    ///
    /// Where the kernel has `openat2`, the open itself refuses symlinks and anything outside `rootDescriptor`,
    /// so a directory swapped for a symlink after the caller's containment check cannot redirect it. Elsewhere
    /// the last component is opened with `O_NOFOLLOW`, as good as the check before it.
    ///
    /// - Returns: the open file, or nil when it is missing, not a regular file, or not under the root.
    static func opening(realPath: String, rootPath: String, rootDescriptor: Int32) -> OpenFile? {
        let prefix = rootPath.utf8.count + 1
        guard realPath.utf8.count > prefix else { return nil }
        let relative = String(decoding: realPath.utf8.dropFirst(prefix), as: UTF8.self)
        var fd: Int32 = -1
        var fallBack = rootDescriptor < 0
        if !fallBack {
            do throws(SystemCallError) {
                fd = try systemCall("openat2") { cmhd_open_beneath(rootDescriptor, relative) }
            } catch {
                fallBack = error.errno.rawValue == ENOSYS || error.errno.rawValue == EPERM
            }
        }
        if fallBack {
            // No openat2 here (or a seccomp filter refusing it): the lexical and realpath checks stand alone.
            fd = (try? systemCall("open") { open(realPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY) }) ?? -1
        }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = close(fd)
            return nil
        }
        return OpenFile(path: realPath, descriptor: fd, identity: FileIdentity(info))
    }

    /// Fills `target` from `offset`, retrying short reads; false when the file ended early or failed.
    func read(offset: UInt64, into target: UnsafeMutableRawBufferPointer) -> Bool {
        var done = 0
        while done < target.count {
            let count = try? systemCall("pread") {
                pread(descriptor, target.baseAddress! + done, target.count - done, off_t(offset) + off_t(done))
            }
            guard let count, count > 0 else { return false }
            done += count
        }
        return true
    }

    static func == (lhs: OpenFile, rhs: OpenFile) -> Bool { lhs === rhs }

    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The parts of `stat` that say whether a path still names the same bytes with the same validators:
/// device and inode (not replaced), size and modification time (not rewritten; the ETag is made of these).
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Glibc)
        modifiedSeconds = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
        #else
        modifiedSeconds = Int64(info.st_mtimespec.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #endif
    }

    /// The identity of the regular file `path` names now (symlinks followed), or nil.
    static func current(path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileIdentity(info)
    }

    /// The identity of the regular file `relativePath` names below the open directory `directory` (symlinks
    /// followed), or nil.
    static func current(relativePath: String, in directory: Int32) -> FileIdentity? {
        current(relativePath: Array(relativePath.utf8CString), in: directory)
    }

    /// The same, for a path already NUL-terminated: handing a `String` to C copies it to the heap when it is
    /// small (up to 15 bytes), which most file names are.
    static func current(relativePath: [CChar], in directory: Int32) -> FileIdentity? {
        var info = stat()
        guard fstatat(directory, relativePath, &info, 0) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileIdentity(info)
    }
}

/// Resolved `/files/` representations by encoded request path, so a repeated request costs one `stat`
/// instead of decoding, `realpath` (a `readlink` per component), `open`, and formatting the validators again.
///
/// An entry is only used while `stat` of its path reports the same device, inode, size and modification
/// time as the descriptor it holds: a file replaced, rewritten or deleted between requests misses and is
/// resolved afresh (containment checks included). Only successful resolutions are stored, so every key was
/// checked once in full, and a hit serves the very inode that check opened.
///
/// The table is split in shards, and each thread keeps to one (threads are handed shards in turn): a hit
/// retains the representation, its header strings and its file, and when every pool thread shares those
/// objects each retain and release moves their cache lines between cores (swift_retain was 5% of the CPU of
/// small Range requests, mostly waiting on those lines). A thread's own copies stay in its core's cache.
final class RepresentationCache: Sendable {
    /// How many shards; threads beyond this share them.
    static let shardCount = 4

    /// The most entries kept; each holds a descriptor open, so this also bounds the descriptors held.
    let capacity: Int
    private let shards: [Shard]

    init(capacity: Int) {
        self.capacity = capacity
        let perShard = max(1, capacity / Self.shardCount)
        shards = (0..<Self.shardCount).map { _ in Shard(capacity: perShard) }
    }

    /// The calling thread's shard.
    private var shard: Shard { shards[threadShardIndex() % shards.count] }

    /// The cached representation for `key`, if the path still names the same file.
    ///
    /// - Parameters:
    ///   - key: the encoded request path below `/files/`.
    ///   - root: the served root, open, or -1 to look the file up by its full path.
    func representation(forKey key: String, root: Int32) -> Representation? {
        shard.representation(forKey: key, root: root)
    }

    /// Stores a freshly resolved file representation (in the calling thread's shard).
    func store(
        _ representation: Representation, file: OpenFile, lexicalPath: String, relativePath: String, forKey key: String
    ) {
        shard.store(representation, file: file, lexicalPath: lexicalPath, relativePath: relativePath, forKey: key)
    }

    private final class Shard: Sendable {
        /// A class, so a hit takes one reference out of the table under the lock instead of copying every
        /// string of the entry.
        private final class Entry: Sendable {
            /// The encoded request path below `/files/` this entry is stored under.
            let key: String
            /// `root/` + the decoded components: what the request names, symlinks unresolved.
            let lexicalPath: String
            /// The decoded components joined with `/`, NUL-terminated: the same file, looked up from the open
            /// root.
            let relativePath: [CChar]
            let representation: Representation
            let identity: FileIdentity

            init(
                key: String, lexicalPath: String, relativePath: String, representation: Representation,
                identity: FileIdentity
            ) {
                self.key = key
                self.lexicalPath = lexicalPath
                self.relativePath = Array(relativePath.utf8CString)
                self.representation = representation
                self.identity = identity
            }
        }

        /// The entries by key, and the one last found or stored.
        private struct Table {
            var entries: [Key: Entry] = [:]
            /// A download asks for one file range after range, and comparing this entry's key is cheaper than
            /// hashing the key into the table.
            var recent: Entry?

            /// The entry for `key`, which becomes the recent one.
            mutating func entry(forKey key: String) -> Entry? {
                if let recent, recent.key.hasSameUTF8(as: key) { return recent }
                guard let entry = entries[Key(key)] else { return nil }
                recent = entry
                return entry
            }
        }

        /// A key hashed and compared by its bytes. `String`'s own `==` and hash treat canonically equivalent
        /// spellings as one, and two file names that differ only so ("café" precomposed and decomposed) are two
        /// files: the second was served the first one's bytes.
        private struct Key: Hashable {
            let text: String

            init(_ text: String) { self.text = text }

            static func == (lhs: Key, rhs: Key) -> Bool { lhs.text.hasSameUTF8(as: rhs.text) }

            func hash(into hasher: inout Hasher) {
                let hashed: Void? = text.utf8.withContiguousStorageIfAvailable {
                    hasher.combine(bytes: UnsafeRawBufferPointer($0))
                }
                if hashed == nil {
                    // The same bytes fed the same way, whatever the string's storage.
                    var copy = text
                    copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
                }
            }
        }

        let capacity: Int
        private let table = NIOLockedValueBox(Table())

        init(capacity: Int) {
            self.capacity = capacity
        }

        func representation(forKey key: String, root: Int32) -> Representation? {
            guard let entry = table.withLockedValue({ $0.entry(forKey: key) }) else { return nil }
            // Outside the lock: the stat is the one system call of a hit. From the open root it walks only the
            // components below the root, not the root's own path from `/` on every request.
            let identity =
                root >= 0
                ? FileIdentity.current(relativePath: entry.relativePath, in: root)
                : FileIdentity.current(path: entry.lexicalPath)
            if identity == entry.identity { return entry.representation }
            table.withLockedValue { table in
                if table.entries[Key(key)] === entry { table.entries[Key(key)] = nil }
                if table.recent === entry { table.recent = nil }
            }
            return nil
        }

        func store(
            _ representation: Representation, file: OpenFile, lexicalPath: String, relativePath: String,
            forKey key: String
        ) {
            let entry = Entry(
                key: key, lexicalPath: lexicalPath, relativePath: relativePath, representation: representation,
                identity: file.identity)
            table.withLockedValue { table in
                // Full: start over rather than track recency; a working set larger than this is not the case
                // the cache is for, and a miss costs no more than an uncached request.
                if table.entries.count >= capacity && table.entries[Key(key)] == nil {
                    table.entries.removeAll(keepingCapacity: true)
                }
                table.entries[Key(key)] = entry
                table.recent = entry
            }
        }
    }
}
