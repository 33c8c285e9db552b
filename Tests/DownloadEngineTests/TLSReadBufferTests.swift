import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import RangeServer
import Testing

@testable import DownloadEngine

/// What `HashPipeline` relies on over TLS (docs/reliability.md, "NIOSSL's read buffer"): NIOSSL decrypts into one
/// buffer of its own and hands it on, then decrypts the next records into the same storage. It writes there only
/// when its reference is the only one: while anything downstream (the HTTP decoder, the body part, the hash
/// thread's queued slice) still holds the buffer, the next read goes to new storage. ThreadSanitizer reports the
/// reuse after a release as a race because the release is ordered by the Swift runtime's reference count, which it
/// cannot see; these tests show the reuse happens only after the release.
@Suite("TLS read buffers")
struct TLSReadBufferTests {
    /// The readable bytes of one buffer NIOSSL handed on, and where they were in memory.
    struct Read: Sendable {
        var start: UInt
        var count: Int
        var end: UInt { start + UInt(count) }
    }

    /// What one response brought: every read, the response's bytes, and the buffers still held, if any.
    struct Reads: Sendable {
        var reads: [Read] = []
        var bytes: [UInt8] = []
        var held: [ByteBuffer] = []
    }

    /// Receives NIOSSL's plaintext buffers: keeps each one (as a slow hash thread does) or copies its bytes and
    /// drops it at once.
    private final class Receiver: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let keep: Bool
        let reads: NIOLockedValueBox<Reads>
        let done: EventLoopPromise<Void>

        init(keep: Bool, reads: NIOLockedValueBox<Reads>, done: EventLoopPromise<Void>) {
            self.keep = keep
            self.reads = reads
            self.done = done
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            let read = buffer.withUnsafeReadableBytes {
                Read(start: UInt(bitPattern: $0.baseAddress), count: $0.count)
            }
            reads.withLockedValue {
                $0.reads.append(read)
                if keep { $0.held.append(buffer) } else { $0.bytes += buffer.readableBytesView }
            }
        }

        func channelInactive(context: ChannelHandlerContext) { done.succeed() }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // The server's close without close_notify after `Connection: close` is an end like any other here.
            context.close(promise: nil)
        }
    }

    /// GETs `target` from the server's TLS port with `Connection: close` through NIOSSL, reading it to the end.
    private func get(_ server: RangeServer, _ target: String, keep: Bool) async throws -> Reads {
        var configuration = TLSConfiguration.makeClientConfiguration()
        let authority = try #require(server.certificateAuthorityPEM)
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(authority.utf8)))
        let context = try NIOSSLContext(configuration: configuration)
        let reads = NIOLockedValueBox(Reads())
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(Receiver(keep: keep, reads: reads, done: done))
                }
            }
            .connect(host: "127.0.0.1", port: try #require(server.tlsPort)).get()
        let request = "GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        try await channel.writeAndFlush(channel.allocator.buffer(string: request))
        try await done.futureResult.get()
        var result = reads.withLockedValue { $0 }
        if keep { result.bytes = result.held.flatMap { Array($0.readableBytesView) } }
        return result
    }

    /// The SHA-256 of the body in `bytes` (a response with its head).
    private func bodyDigest(_ bytes: [UInt8]) throws -> String {
        let end = try #require(bytes.firstRange(of: Array("\r\n\r\n".utf8)), "no end of the head")
        return HeaderValues.hex(SHA256.hash(data: bytes[end.upperBound...]))
    }

    @Test("a buffer still held downstream is never written again: each read goes to storage of its own")
    func heldBuffersAreNeverReused() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let result = try await get(server, "/bytes/1M?seed=441", keep: true)
            // 1 MiB in TLS records of at most 16 KiB, handed on what one socket read decrypts to (a few reads, more when
            // the client keeps up): each decrypted while every earlier one was still held.
            #expect(result.reads.count >= 3, "\(result.reads.count) reads")
            let sorted = result.reads.filter { $0.count > 0 }.sorted { $0.start < $1.start }
            let overlaps = zip(sorted, sorted.dropFirst()).filter { $0.end > $1.start }.count
            #expect(overlaps == 0, "\(overlaps) held buffers share memory with another")
            print("TLS read buffers held: \(result.reads.count) reads in \(Set(sorted.map(\.start)).count) places")
            // Had NIOSSL written into a held buffer, the bytes kept would not be the body that was sent.
            #expect(try bodyDigest(result.bytes) == expectedSHA256(size: 1 << 20, seed: 441))
        }
    }

    @Test("a buffer released at once is reused for the next records: the reuse ThreadSanitizer reports")
    func releasedBuffersAreReused() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let result = try await get(server, "/bytes/1M?seed=442", keep: false)
            #expect(result.reads.count >= 3, "\(result.reads.count) reads")
            // Reads land where earlier ones were: the same storage, written again once nothing else held it (it also
            // grows a few times, to hold what one socket read decrypts to).
            let places = Set(result.reads.map(\.start)).count
            print("TLS read buffers released at once: \(result.reads.count) reads in \(places) places")
            #expect(places < result.reads.count, "\(places) places for \(result.reads.count) reads")
            #expect(try bodyDigest(result.bytes) == expectedSHA256(size: 1 << 20, seed: 442))
        }
    }
}
