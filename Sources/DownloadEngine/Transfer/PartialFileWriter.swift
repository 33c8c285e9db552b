import Crypto
import Foundation
import NIOCore

/// The transfer's ``BodySink``: writes each body part into the partial file the moment it arrives, then hands it to
/// a ``HashPipeline`` (when the digest is computed).
///
/// `pwrite` puts the bytes in the kernel's page cache, which outlives the process: once ``consume(_:)`` returned,
/// a `kill -9` cannot take them back. Parts are written in place from the transport's buffer (no copy, no batching,
/// at most ``DownloadConfiguration/writeBufferSize`` per call). The writer is used on the transport's thread
/// while the body drains and by the transfer before and after, never both at once (``TransportBody/drain(into:)``
/// returns after the last call), which is why it is `@unchecked Sendable`.
final class PartialFileWriter: BodySink, @unchecked Sendable {
    private let fd: Int32
    private let path: String
    private let chunkLimit: Int
    private let activity: ActivityClock
    /// Bytes at the start of the body that the partial file already holds (a truthful earlier range start).
    private var skip: Int64
    /// Where the body should end (the `Content-Range` end or the total); bytes past it are not written.
    private let end: Int64?
    private(set) var length: Int64
    let hashes: HashPipeline?
    /// The task's first record save, made before the partial file holds more than `owedSaveLimit` bytes.
    private var owedSave: (@Sendable () throws -> Void)?
    private let owedSaveLimit: Int64
    private(set) var madeOwedSave = false

    init(
        fd: Int32, path: String, length: Int64, hasher: SHA256?, unhashedPrefix: Int64 = 0, skip: Int64,
        end: Int64?, chunkLimit: Int, activity: ActivityClock, owedSave: (@Sendable () throws -> Void)? = nil,
        owedSaveLimit: Int64 = 0
    ) {
        self.owedSave = owedSave
        self.owedSaveLimit = owedSaveLimit
        self.fd = fd
        self.path = path
        self.length = length
        self.hashes = hasher.map {
            HashPipeline($0, prefix: (fd, path, unhashedPrefix), expectedBytes: end.map { $0 - length })
        }
        self.skip = skip
        self.end = end
        self.chunkLimit = chunkLimit
        self.activity = activity
    }

    func consume(_ part: ByteBuffer) throws -> Bool {
        var start = Self.skipping(&skip, in: part.readableBytes)
        var stop = part.readableBytes
        if let end { stop = start + Int(max(0, min(end - length, Int64(stop - start)))) }
        while start < stop {
            let chunk = part.getSlice(at: part.readerIndex + start, length: min(stop - start, chunkLimit))!
            if let save = owedSave, length + Int64(chunk.readableBytes) > owedSaveLimit {
                try save()
                owedSave = nil
                madeOwedSave = true
            }
            try chunk.withUnsafeReadableBytes { try FileIO.writeAll(fd, path, $0, at: length) }
            hashes?.submit(chunk)
            length += Int64(chunk.readableBytes)
            start += chunk.readableBytes
        }
        activity.advance(to: length)
        // Bytes past the announced end: the response is not what it claimed, stop reading it.
        return start == part.readableBytes
    }
}
