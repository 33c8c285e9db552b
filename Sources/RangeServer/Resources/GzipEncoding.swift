import HTTPVocabulary
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPCompression

/// The gzip-encoded representations the `encoding` fault serves, made once per identity representation.
///
/// The bytes come from swift-nio-extras' `HTTPResponseCompressor` (zlib), driven through an `EmbeddedChannel`, the
/// library's only public way in: one request head that accepts gzip, then the response written whole and flushed
/// once, so it is compressed in one pass. The same input gives the same bytes every time, in every process, which
/// is what lets a range of the encoded bytes be judged, and a client resume across requests.
///
/// An encoded representation is a representation of its own: its strong ETag is the identity one's with `-gzip`
/// appended, its length and ranges are over the encoded bytes, its digest is of the encoded bytes.
final class GzipEncoding: Sendable {
    /// The longest identity representation encoded (it is read, and its encoding held, in memory).
    static let maximumIdentityLength: UInt64 = 64 << 20
    /// Encoded bytes kept at most; past it the table starts afresh.
    static let cacheLimit = 256 << 20

    private let table = NIOLockedValueBox<(entries: [String: Representation], bytes: Int)>(([:], 0))

    /// The gzip encoding of `identity`, from the table or made now.
    ///
    /// - Returns: `nil` when the representation is too long to encode or has no stable identity (no digest key),
    ///   or its bytes could not be read.
    func encoded(_ identity: Representation) -> Representation? {
        guard identity.length <= Self.maximumIdentityLength, let key = identity.digestKey else { return nil }
        if let cached = table.withLockedValue({ $0.entries[key] }) { return cached }
        guard let bytes = Self.gzip(identity.source, length: identity.length) else { return nil }
        let tag = identity.entityTag.map { EntityTag(opaqueTag: $0.opaqueTag + "-gzip", isWeak: $0.isWeak) }
        let representation = Representation(
            source: .bytes(SharedBytes(bytes)), length: UInt64(bytes.count), contentType: identity.contentType,
            entityTag: tag, lastModified: identity.lastModified, digestKey: key + "|gzip")
        table.withLockedValue { table in
            if table.bytes + bytes.count > Self.cacheLimit { table = ([:], 0) }
            if table.entries.updateValue(representation, forKey: key) == nil { table.bytes += bytes.count }
        }
        return representation
    }

    /// `length` bytes of `source`, gzip-encoded; `nil` when they could not be read or zlib failed.
    static func gzip(_ source: ContentSource, length: UInt64) -> [UInt8]? {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try channel.pipeline.syncOperations.addHandler(HTTPResponseCompressor())
            var request = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
            request.headers.add(name: "Accept-Encoding", value: "gzip")
            try channel.writeInbound(HTTPServerRequestPart.head(request))
            _ = try channel.readInbound(as: HTTPServerRequestPart.self)
            // Written without a flush until the end: the compressor then encodes the whole body in one pass.
            channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)), promise: nil)
            var offset: UInt64 = 0
            while offset < length {
                let count = Int(min(1 << 20, length - offset))
                var buffer = channel.allocator.buffer(capacity: count)
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
                    source.read(offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: target[0..<count]))
                        ? count : 0
                }
                guard read == count else { return nil }
                channel.write(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
                offset += UInt64(count)
            }
            channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            var encoded: [UInt8] = []
            var sawGzip = false
            while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
                switch part {
                case .head(let head): sawGzip = head.headers["Content-Encoding"].first == "gzip"
                case .body(.byteBuffer(let buffer)): encoded += buffer.readableBytesView
                case .body(.fileRegion), .end: break
                }
            }
            return sawGzip ? encoded : nil
        } catch {
            return nil
        }
    }
}
