import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolved `/files/` representations by encoded request path, so a repeated request costs one `stat`
/// instead of decoding, `realpath` (a `readlink` per component), `open`, and formatting the validators again.
///
/// An entry is only used while `stat` of its path reports the same device, inode, size and modification
/// time as the descriptor it holds: a file replaced, rewritten or deleted between requests misses and is
/// resolved afresh (containment checks included). Only successful resolutions are stored, so every key was
/// checked once in full, and a hit serves the very inode that check opened. Where the kernel reports changes
/// (``FileChangeWatch``), a hit on an entry whose file and directories nothing changed since its last `stat` skips
/// the `stat`: the answer is the same, the system call is not made.
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
    /// The changes to the cached files, shared by the shards (one inotify queue a cache).
    private let watch: FileChangeWatch

    /// The capacity the process's descriptor limit allows: a quarter of the soft `RLIMIT_NOFILE` (the rest stays
    /// for connections, the journal and the listeners), between 256 and 4,096.
    ///
    /// Each thread fills a shard of its own, so a shard must hold a working set whole: with 256 (64 a shard), 500
    /// files fetched in turn over HTTP/2 missed every time, and each miss resolved the path anew (`realpath`, a
    /// `readlink` per component, 12 % of the server's CPU; bench case 11 at 0.26 of nginx, whose
    /// `open_file_cache` holds 1,000). Under the usual 1,024 descriptors it stays 256.
    static func capacityForDescriptorLimit() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 256 }
        let soft = UInt64(limit.rlim_cur)  // RLIM_INFINITY is the largest value: the clamp below takes it
        return Int(min(4096, max(256, soft / 4)))
    }

    init(capacity: Int) {
        self.capacity = capacity
        let perShard = max(1, capacity / Self.shardCount)
        let watch = FileChangeWatch(watchLimit: 2 * capacity)
        self.watch = watch
        shards = (0..<Self.shardCount).map { _ in Shard(capacity: perShard, watch: watch) }
    }

    /// The calling thread's shard.
    private var shard: Shard { shards[threadShardIndex() % shards.count] }

    /// The cached representation for `key`, if the path still names the same file.
    ///
    /// - Parameters:
    ///   - key: the encoded request path below `/files/`.
    ///   - root: the served root, open, or -1 to look the file up by its full path.
    ///   - readBy: when the request had been read from its socket, if the front end knows (see
    ///     `FileChangeWatch.changes(readBy:)`).
    func representation(forKey key: String, root: Int32, readBy: ContinuousClock.Instant? = nil) -> Representation? {
        shard.representation(forKey: key, root: root, readBy: readBy)
    }

    /// Stores a freshly resolved file representation (in the calling thread's shard).
    ///
    /// - Parameters:
    ///   - root: the served root, open, or -1.
    ///   - symlinkFree: whether `lexicalPath` is the file's real path (no component is a symlink); only such a file
    ///     is watched for changes.
    func store(
        _ representation: Representation, file: OpenFile, lexicalPath: String, relativePath: String, forKey key: String,
        root: Int32, symlinkFree: Bool
    ) {
        shard.store(
            representation, file: file, lexicalPath: lexicalPath, relativePath: relativePath, forKey: key, root: root,
            symlinkFree: symlinkFree)
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

        /// An entry and what the change watch says of it.
        private struct Slot {
            let entry: Entry
            /// The watch's change count when a `stat` last found the path unchanged, if the file is watched.
            var checkedAt: UInt64?
            /// The watch's queue generation the file's watches belong to.
            var generation: UInt64
        }

        /// The entries by key, and the one last found or stored.
        private struct Table {
            var entries: [Key: Slot] = [:]
            /// A download asks for one file range after range, and comparing this entry's key is cheaper than
            /// hashing the key into the table.
            var recent: Slot?

            /// The slot for `key`, which becomes the recent one.
            mutating func slot(forKey key: String) -> Slot? {
                if let recent, recent.entry.key.hasSameUTF8(as: key) { return recent }
                guard let slot = entries[Key(key)] else { return nil }
                recent = slot
                return slot
            }

            /// Notes that `entry`'s path was found unchanged at change count `count`.
            mutating func markChecked(_ entry: Entry, at count: UInt64) {
                let key = Key(entry.key)
                guard let slot = entries[key], slot.entry === entry, slot.checkedAt != nil else { return }
                entries[key]?.checkedAt = count
                if recent?.entry === entry { recent?.checkedAt = count }
            }

            /// Forgets `entry`, if it is still the one stored under its key.
            mutating func remove(_ entry: Entry) {
                let key = Key(entry.key)
                if entries[key]?.entry === entry { entries[key] = nil }
                if recent?.entry === entry { recent = nil }
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
        private let watch: FileChangeWatch

        init(capacity: Int, watch: FileChangeWatch) {
            self.capacity = capacity
            self.watch = watch
        }

        func representation(forKey key: String, root: Int32, readBy: ContinuousClock.Instant?) -> Representation? {
            guard let slot = table.withLockedValue({ $0.slot(forKey: key) }) else { return nil }
            let entry = slot.entry
            // The count read now, after the request arrived: any change made before it is counted.
            var seen: UInt64?
            if let checkedAt = slot.checkedAt {
                let now = watch.changes(readBy: readBy)
                if now.generation == slot.generation {
                    if now.count == checkedAt { return entry.representation }
                    seen = now.count
                }
            }
            // Outside the lock: the stat is the one system call of a hit the watch cannot vouch for. From the open
            // root it walks only the components below the root, not the root's own path from `/`.
            let identity =
                root >= 0
                ? FileIdentity.current(relativePath: entry.relativePath, in: root)
                : FileIdentity.current(path: entry.lexicalPath)
            if identity == entry.identity {
                if let seen { table.withLockedValue { $0.markChecked(entry, at: seen) } }
                return entry.representation
            }
            table.withLockedValue { $0.remove(entry) }
            return nil
        }

        func store(
            _ representation: Representation, file: OpenFile, lexicalPath: String, relativePath: String,
            forKey key: String, root: Int32, symlinkFree: Bool
        ) {
            let entry = Entry(
                key: key, lexicalPath: lexicalPath, relativePath: relativePath, representation: representation,
                identity: file.identity)
            var slot = Slot(entry: entry, checkedAt: nil, generation: 0)
            if symlinkFree, let generation = watch.watch(relativePath: relativePath, root: root, file: file.descriptor)
            {
                // The count read after the watches exist, then a stat: a change before the watches is not in the
                // queue, and the stat sees it; one after them is counted now or at a later read.
                let now = watch.changes()
                slot.generation = generation
                if now.generation == generation,
                    FileIdentity.current(relativePath: entry.relativePath, in: root) == file.identity
                {
                    slot.checkedAt = now.count
                }
            }
            table.withLockedValue { table in
                // Full: start over rather than track recency; a working set larger than this is not the case
                // the cache is for, and a miss costs no more than an uncached request.
                if table.entries.count >= capacity && table.entries[Key(key)] == nil {
                    table.entries.removeAll(keepingCapacity: true)
                }
                table.entries[Key(key)] = slot
                table.recent = slot
            }
        }
    }
}
