import Crypto
import HTTPVocabulary

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resolved resource: its bytes and validators, independent of how a particular request asked for it.
///
/// A class with constant fields: a cached representation answers many requests, and handing one along (out of
/// the cache, into the decision, into the plan) is then one reference, not a copy of every string it holds.
/// The validator faults make a new one (see `applying(_:)`).
final class Representation: Sendable {
    /// Where the bytes come from.
    let source: ContentSource
    /// The full length in bytes.
    let length: UInt64
    /// The media type sent in Content-Type.
    let contentType: String
    /// The advertised ETag, after `no-etag` / `weak-etag` faults.
    let entityTag: EntityTag?
    /// The advertised Last-Modified, after the `no-last-modified` fault.
    let lastModified: HTTPDate?
    /// `entityTag` as sent in the ETag field, formatted once: cached representations answer many requests.
    let entityTagHeader: String?
    /// `lastModified` as sent in the Last-Modified field, formatted once.
    let lastModifiedHeader: String?
    /// Identifies the bytes for the digest cache; nil when no digest is offered (over 4 GiB generated).
    let digestKey: String?

    init(
        source: ContentSource, length: UInt64, contentType: String, entityTag: EntityTag?, lastModified: HTTPDate?,
        digestKey: String?
    ) {
        self.source = source
        self.length = length
        self.contentType = contentType
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.digestKey = digestKey
        entityTagHeader = entityTag?.headerValue
        lastModifiedHeader = lastModified?.headerValue
    }

    /// The metadata the conditional-request decision needs.
    var metadata: RepresentationMetadata {
        RepresentationMetadata(length: length, entityTag: entityTag, lastModified: lastModified)
    }

    /// The representation of `/bytes/{length}?seed=&version=`.
    ///
    /// - Parameters:
    ///   - lastModifiedVersion: the version whose Last-Modified it carries; `version` when nil (`lm-collide` gives
    ///     an older one).
    static func generated(
        length: UInt64, seed: UInt64, version: UInt64, lastModifiedVersion: UInt64? = nil
    ) -> Representation {
        // Fixed per (seed, version) and well in the past, so If-Modified-Since and If-Range dates are stable
        // across restarts and never in the future.
        let dated = lastModifiedVersion ?? version
        let lastModified = 1_609_459_200 + Int64(dated % 10_000) * 86_400 + Int64(seed % 1_440) * 60
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

    /// The representation of an open regular file.
    static func file(_ file: OpenFile) -> Representation {
        let identity = file.identity
        let length = UInt64(identity.size)
        let tag =
            "f" + String(length, radix: 16) + "-" + String(identity.modifiedSeconds, radix: 16) + "-"
            + String(identity.modifiedNanoseconds, radix: 16)
        return Representation(
            source: .file(file),
            length: length,
            contentType: mediaType(forPath: file.path),
            entityTag: EntityTag(opaqueTag: tag, isWeak: false),
            lastModified: HTTPDate(secondsSince1970: identity.modifiedSeconds),
            digestKey: file.path + "|" + tag
        )
    }

    /// This representation with other validators (the validator faults: `no-etag`, `weak-etag`, `etag-salt`,
    /// `no-last-modified`); the bytes are the same.
    func with(entityTag: EntityTag?) -> Representation {
        Representation(
            source: source, length: length, contentType: contentType, entityTag: entityTag,
            lastModified: lastModified, digestKey: digestKey)
    }

    /// This representation without its Last-Modified (`no-last-modified`).
    func withoutLastModified() -> Representation {
        Representation(
            source: source, length: length, contentType: contentType, entityTag: entityTag, lastModified: nil,
            digestKey: digestKey)
    }

    /// SHA-256 of the whole representation, read in 1 MiB steps.
    func sha256() -> [UInt8]? {
        var hasher = SHA256()
        let chunk = 1 << 20
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset: UInt64 = 0
        while offset < length {
            let count = Int(min(UInt64(chunk), length - offset))
            let ok = buffer.withUnsafeMutableBytes { raw -> Bool in
                source.read(offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]))
            }
            guard ok else { return nil }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            offset += UInt64(count)
        }
        return Array(hasher.finalize())
    }
}

/// A media type from a file name's extension; unknown ones are served as octets.
///
/// Compares the bytes after the last dot case-insensitively, so it allocates nothing (it used to lower-case
/// a copy of the extension per request).
func mediaType(forPath path: String) -> String {
    let utf8 = path.utf8
    guard let dot = utf8.lastIndex(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "/") }),
        utf8[dot] == UInt8(ascii: ".")
    else { return "application/octet-stream" }
    let suffix = utf8[utf8.index(after: dot)...]
    for (extensions, type) in mediaTypes where extensions.contains(where: { equalsIgnoringASCIICase(suffix, $0) }) {
        return type
    }
    return "application/octet-stream"
}

/// Extensions (lower case) and the media type each is served as.
private let mediaTypes: [([String], String)] = [
    (["txt", "text", "md"], "text/plain; charset=utf-8"),
    (["html", "htm"], "text/html; charset=utf-8"),
    (["json"], "application/json"),
    (["css"], "text/css"),
    (["js"], "text/javascript"),
    (["png"], "image/png"),
    (["jpg", "jpeg"], "image/jpeg"),
    (["gif"], "image/gif"),
    (["svg"], "image/svg+xml"),
    (["pdf"], "application/pdf"),
    (["zip"], "application/zip"),
    (["gz"], "application/gzip"),
]

/// Whether `bytes` spell `lowercase` with any ASCII letter case.
func equalsIgnoringASCIICase(_ bytes: Substring.UTF8View, _ lowercase: String) -> Bool {
    bytes.elementsEqual(lowercase.utf8) { byte, expected in
        byte.asciiLowercased == expected
    }
}
