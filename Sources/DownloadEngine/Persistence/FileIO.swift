import Crypto
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Every system call the engine makes goes through here: ``systemCall(_:_:)`` retries EINTR, and its error
/// becomes a ``DownloadError/fileSystem(_:)`` naming the call and the path.
enum FileIO {
    @discardableResult
    static func call<T: FixedWidthInteger>(_ name: StaticString, _ path: String, _ body: () -> T) throws -> T {
        do throws(SystemCallError) {
            return try systemCall(name, body)
        } catch {
            throw failure(error, path)
        }
    }

    /// `call(path): reason`, the message every file-system failure carries; a full disk (or quota) says so first,
    /// and that what was written is kept, since the user's next step is to make room and run again.
    static func failure(_ error: SystemCallError, _ path: String) -> DownloadError {
        if error.errno == .noSpace || error.errno == .diskQuotaExceeded {
            return .fileSystem(
                "disk full: \(error.call)(\(path)): \(error.reason); what was written is kept, make room and run "
                    + "again to resume")
        }
        return .fileSystem("\(error.call)(\(path)): \(error.reason)")
    }

    /// The `errno` a call failed with, or `nil` when it succeeded.
    static func errnoOf(_ name: StaticString, _ body: () -> Int32) -> Int32? {
        do throws(SystemCallError) {
            try systemCall(name, body)
            return nil
        } catch {
            return error.errno.rawValue
        }
    }

    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) throws -> Int32 {
        try call("open", path) { Glibc_open(path, flags, mode) }
    }

    static func close(_ fd: Int32) { _ = Glibc_close(fd) }

    static func size(_ fd: Int32, _ path: String) throws -> Int64 {
        var st = stat()
        try call("fstat", path) { fstat(fd, &st) }
        return Int64(st.st_size)
    }

    static func fileSize(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_size)
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func writeAll(_ fd: Int32, _ path: String, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        do throws(SystemCallError) {
            try SystemCalls.writeAll(fd, bytes, at: offset)
        } catch {
            throw failure(error, path)
        }
    }

    static func read(
        _ fd: Int32, _ path: String, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws
        -> Int
    {
        try call("pread", path) { pread(fd, buffer.baseAddress!, buffer.count, off_t(offset)) }
    }

    static func truncate(_ fd: Int32, _ path: String, to length: Int64) throws {
        try call("ftruncate", path) { ftruncate(fd, off_t(length)) }
    }

    static func fsync(_ fd: Int32, _ path: String) throws {
        try call("fsync", path) { Glibc_fsync(fd) }
    }

    static func fsyncDirectory(_ path: String) throws {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try fsync(fd, path)
    }

    static func rename(_ from: String, _ to: String) throws {
        try call("rename", "\(from) -> \(to)") { Glibc_rename(from, to) }
    }

    static func unlink(_ path: String) {
        _ = Glibc_unlink(path)
    }

    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws {
        if isDirectory(path) { return }
        let parent = LexicalPath.parent(path)
        if parent != path, !parent.isEmpty { try makeDirectories(parent) }
        if let code = errnoOf("mkdir", { mkdir(path, 0o755) }), code != EEXIST {
            throw DownloadError.fileSystem("mkdir(\(path)): \(String(cString: strerror(code)))")
        }
    }

    static func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            throw DownloadError.fileSystem("opendir(\(path)): \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Replaces `path` with `bytes` atomically: temporary file, rename. With `sync`, the temporary file is
    /// `fsync`ed before the rename and the directory after it, so the new content also survives power loss;
    /// without, a process killed at any instant leaves the old or the new content (and perhaps the temporary file).
    static func atomicWrite(_ bytes: [UInt8], to path: String, sync: Bool) throws {
        let temporary = path + ".tmp"
        let fd = try open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try bytes.withUnsafeBytes { try writeAll(fd, temporary, $0, at: 0) }
            if sync { try fsync(fd, temporary) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        try rename(temporary, path)
        if sync { try fsyncDirectory(LexicalPath.parent(path)) }
    }

    /// Moves a file into place, copying when `rename` crosses file systems; the destination appears atomically.
    /// With `sync`, a copy is `fsync`ed before its rename and the destination directory after.
    /// The destination's directory is created only when the rename finds it missing (it normally exists: the
    /// engine checked it when the task was added).
    static func moveIntoPlace(_ from: String, _ to: String, sync: Bool) throws {
        var failure = errnoOf("rename") { Glibc_rename(from, to) }
        if failure == ENOENT, exists(from) {
            try makeDirectories(LexicalPath.parent(to))
            failure = errnoOf("rename") { Glibc_rename(from, to) }
        }
        if let failure, failure != EXDEV {
            throw DownloadError.fileSystem("rename(\(from) -> \(to)): \(String(cString: strerror(failure)))")
        }
        if failure == EXDEV {
            let temporary = LexicalPath.parent(to) + "/.\(LexicalPath.lastComponent(to)).rangefetch-tmp"
            let input = try open(from, O_RDONLY)
            defer { close(input) }
            let output = try open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
            do {
                var offset: Int64 = 0
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
                defer { buffer.deallocate() }
                while true {
                    let n = try read(input, from, into: buffer, at: offset)
                    if n == 0 { break }
                    try writeAll(output, temporary, UnsafeRawBufferPointer(rebasing: buffer[0..<n]), at: offset)
                    offset += Int64(n)
                }
                if sync { try fsync(output, temporary) }
            } catch {
                close(output)
                unlink(temporary)
                throw error
            }
            close(output)
            try rename(temporary, to)
            unlink(from)
        }
        if sync { try fsyncDirectory(LexicalPath.parent(to)) }
    }
}

extension FileIO {
    /// Hashes the first `length` bytes of `fd` into `hasher`, 1 MiB at a time.
    ///
    /// - Throws: ``DownloadError/fileSystem(_:)`` when a read fails or the file is shorter.
    static func hashPrefix(_ fd: Int32, _ path: String, length: Int64, into hasher: inout SHA256) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let count = try read(fd, path, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            guard count > 0 else { throw DownloadError.fileSystem("\(path) is shorter than the \(length) bytes kept") }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
    }
}

// Unambiguous names for the C functions that the enum's own members shadow.
private func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }
private func Glibc_fsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func Glibc_rename(_ a: String, _ b: String) -> Int32 { rename(a, b) }
private func Glibc_unlink(_ path: String) -> Int32 { unlink(path) }
