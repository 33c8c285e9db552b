import Crypto
import Foundation
import NIOCore

/// SHA-256 of a body on a thread of its own, in order, while the transport's thread goes on reading and writing.
///
/// Hashing costs about as much CPU per byte as receiving and writing together (a profile of a 1 GiB download put
/// half of all samples in SHA-256); on the transport's thread it would halve the rate at which the connection is
/// read. The parts are the transport's buffers, retained until hashed, never copied. At most `limit` bytes wait:
/// past that, ``submit(_:)`` blocks its caller (the transport's thread) until the hasher catches up, which bounds
/// memory and slows the connection to the hashing rate.
final class HashPipeline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "rangefetch.sha256")
    private let condition = NSCondition()
    private let limit: Int
    private var waiting = 0
    /// Only touched on `queue`.
    private var hasher: SHA256

    init(_ hasher: SHA256, limit: Int = 8 << 20) {
        self.hasher = hasher
        self.limit = limit
    }

    /// Queues bytes that were just written, after every part submitted before.
    func submit(_ part: ByteBuffer) {
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

    /// The hash state once every submitted part has been hashed.
    func result() async -> SHA256 {
        await withCheckedContinuation { continuation in
            queue.async { [self] in continuation.resume(returning: hasher) }
        }
    }
}
