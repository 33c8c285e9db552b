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
                fd = try openBeneath(rootDescriptor, relative)
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
