import Crypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resolved resource: its bytes and validators, independent of how a particular request asked for it.
struct Representation: Sendable {
    /// Where the bytes come from.
    var source: ContentSource
    /// The full length in bytes.
    var length: UInt64
    /// The media type sent in Content-Type.
    var contentType: String
    /// The advertised ETag, after `no-etag` / `weak-etag` faults.
    var entityTag: EntityTag?
    /// The advertised Last-Modified, after the `no-last-modified` fault.
    var lastModified: HTTPDate?
    /// Identifies the bytes for the digest cache; nil when no digest is offered (over 4 GiB generated).
    var digestKey: String?

    /// The metadata the conditional-request decision needs.
    var metadata: RepresentationMetadata {
        RepresentationMetadata(length: length, entityTag: entityTag, lastModified: lastModified)
    }

    /// The representation of `/bytes/{length}?seed=&version=`.
    static func generated(length: UInt64, seed: UInt64, version: UInt64) -> Representation {
        // Fixed per (seed, version) and well in the past, so If-Modified-Since and If-Range dates are stable
        // across restarts and never in the future.
        let lastModified = 1_609_459_200 + Int64(version % 10_000) * 86_400 + Int64(seed % 1_440) * 60
        let tag = "b" + String(length, radix: 16) + "-" + String(seed, radix: 16) + "-v" + String(version)
        return Representation(
            source: .generated(ContentGenerator(seed: seed, version: version)),
            length: length,
            contentType: "application/octet-stream",
            entityTag: EntityTag(opaqueTag: tag, isWeak: false),
            lastModified: HTTPDate(secondsSince1970: lastModified),
            digestKey: length <= 4 << 30 ? tag : nil
        )
    }

    /// The representation of a regular file at `path`, or nil when it is not one.
    static func file(atPath path: String) -> Representation? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let length = UInt64(info.st_size)
        #if canImport(Glibc)
        let seconds = Int64(info.st_mtim.tv_sec)
        let nanoseconds = Int64(info.st_mtim.tv_nsec)
        #else
        let seconds = Int64(info.st_mtimespec.tv_sec)
        let nanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #endif
        let tag =
            "f" + String(length, radix: 16) + "-" + String(seconds, radix: 16) + "-" + String(nanoseconds, radix: 16)
        return Representation(
            source: .file(path: path),
            length: length,
            contentType: mediaType(forPath: path),
            entityTag: EntityTag(opaqueTag: tag, isWeak: false),
            lastModified: HTTPDate(secondsSince1970: seconds),
            digestKey: path + "|" + tag
        )
    }

    /// Applies the validator faults: they change what is advertised, never the bytes.
    func applying(_ faults: FaultPlan) -> Representation {
        var copy = self
        if faults.noETag {
            copy.entityTag = nil
        } else if faults.weakETag, let tag = entityTag {
            copy.entityTag = EntityTag(opaqueTag: tag.opaqueTag, isWeak: true)
        }
        if faults.noLastModified { copy.lastModified = nil }
        return copy
    }

    /// SHA-256 of the whole representation, read in 1 MiB steps.
    func sha256() -> [UInt8]? {
        var hasher = SHA256()
        let chunk = 1 << 20
        var buffer = [UInt8](repeating: 0, count: chunk)
        var fd: Int32 = -1
        if case .file(let path) = source {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
        }
        defer { if fd >= 0 { _ = close(fd) } }
        var offset: UInt64 = 0
        while offset < length {
            let count = Int(min(UInt64(chunk), length - offset))
            let ok = buffer.withUnsafeMutableBytes { raw -> Bool in
                let target = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                switch source {
                case .generated(let generator):
                    generator.fill(target, offset: offset)
                    return true
                case .file:
                    return pread(fd, target.baseAddress!, count, off_t(offset)) == count
                }
            }
            guard ok else { return nil }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += UInt64(count)
        }
        return Array(hasher.finalize())
    }
}

/// A media type from a file name's extension; unknown ones are served as octets.
func mediaType(forPath path: String) -> String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
    switch name[name.index(after: dot)...].lowercased() {
    case "txt", "text", "md": return "text/plain; charset=utf-8"
    case "html", "htm": return "text/html; charset=utf-8"
    case "json": return "application/json"
    case "css": return "text/css"
    case "js": return "text/javascript"
    case "png": return "image/png"
    case "jpg", "jpeg": return "image/jpeg"
    case "gif": return "image/gif"
    case "svg": return "image/svg+xml"
    case "pdf": return "application/pdf"
    case "zip": return "application/zip"
    case "gz": return "application/gzip"
    default: return "application/octet-stream"
    }
}
