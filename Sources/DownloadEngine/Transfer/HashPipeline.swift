import Crypto
import Foundation
import NIOCore

/// SHA-256 of a body on a thread of its own, in order, while the transport's thread goes on reading and writing.
///
/// Hashing costs about as much CPU per byte as receiving and writing together (a profile of a 1 GiB download put
/// half of all samples in SHA-256); on the transport's thread it would halve the rate at which the connection is
/// read. The parts are the transport's buffers, retained until hashed, never copied. At most `limit` bytes wait:
/// past that, ``submit(_:)`` blocks its caller (the transport's thread) until the hasher catches up, which bounds
/// memory and slows the connection to the hashing rate. A short body is the exception (``inlineLimit``): it is
/// hashed in ``submit(_:)`` itself.
final class HashPipeline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "rangefetch.sha256")
    private let condition = NSCondition()
    private let limit: Int
    private var waiting = 0
    /// Only touched on `queue`, or by ``submit(_:)`` and ``result()`` when ``hashesInline``.
    private var hasher: SHA256
    /// Only touched on `queue`: a failure to read the kept prefix back.
    private var failure: (any Error)?
    /// Whether parts are hashed on the caller's thread, in ``submit(_:)`` (see ``inlineLimit``).
    let hashesInline: Bool

    /// Bodies up to this many bytes, with nothing kept from an earlier attempt, are hashed inline: a 256 KiB body
    /// arrives in about sixteen parts, and sixteen hand-offs (each a dispatch and a wake-up of the hash thread)
    /// cost more CPU than the quarter of a millisecond of hashing they would move off the transport's thread; with
    /// several files in flight the transport's threads are busy anyway, so moving it gains no parallelism.
    static let inlineLimit: Int64 = 1 << 20

    /// Starts a pipeline; with `prefix`, the first `prefix.length` bytes of the partial file (kept from an earlier
    /// attempt) are read back and hashed first, on the hash thread, while the request for the rest is sent and its
    /// first parts arrive: a resume no longer waits for the kept prefix to be hashed before asking for the rest.
    ///
    /// - Parameter expectedBytes: The bytes the body should still bring, when known; at most ``inlineLimit``
    ///   without a prefix to hash makes the pipeline hash inline.
    init(
        _ hasher: SHA256, prefix: (fd: Int32, path: String, length: Int64)? = nil, expectedBytes: Int64? = nil,
        limit: Int = 8 << 20
    ) {
        self.hasher = hasher
        self.limit = limit
        self.hashesInline = (prefix?.length ?? 0) == 0 && (expectedBytes ?? .max) <= Self.inlineLimit
        if let prefix, prefix.length > 0 {
            queue.async { [self] in
                do {
                    try FileIO.hashPrefix(prefix.fd, prefix.path, length: prefix.length, into: &self.hasher)
                } catch {
                    failure = error
                }
            }
        }
    }

    /// Queues bytes that were just written, after every part submitted before.
    func submit(_ part: ByteBuffer) {
        if hashesInline {
            part.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            return
        }
        let count = part.readableBytes
        condition.lock()
        while waiting >= limit { condition.wait() }
        waiting += count
        condition.unlock()
        queue.async { [self] in
            part.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            condition.lock()
            waiting -= count
            condition.signal()
            condition.unlock()
        }
    }

    /// The hash state once the prefix and every submitted part have been hashed.
    ///
    /// - Throws: The error reading the prefix back, if that failed.
    func result() async throws -> SHA256 {
        if hashesInline { return hasher }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                if let failure {
                    continuation.resume(throwing: failure)
                } else {
                    continuation.resume(returning: hasher)
                }
            }
        }
    }
}
