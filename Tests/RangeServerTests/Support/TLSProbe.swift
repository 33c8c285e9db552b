import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import TestSupport

/// A minimal TLS client for the server's TLS tests: it sends one request and reports the bytes that came back and
/// how the connection ended, which is what a TLS fault changes (a close_notify, a bare TCP close, a reset, a failed
/// handshake). AsyncHTTPClient or curl would fold these into one "connection closed" error.
struct TLSProbe {
    /// How the connection ended.
    enum Ending: Equatable, CustomStringConvertible {
        /// The server sent close_notify.
        case closeNotify
        /// TCP ended without close_notify (NIOSSL's `uncleanShutdown`).
        case uncleanShutdown
        /// Any other error, described.
        case error(String)
        /// Nothing ended it before the time limit.
        case timedOut

        var description: String {
            switch self {
            case .closeNotify: "close_notify"
            case .uncleanShutdown: "unclean shutdown"
            case .error(let text): "error: \(text)"
            case .timedOut: "timed out"
            }
        }
    }

    /// The result of one probe.
    struct Result {
        /// Everything received after the handshake: status line, header and body.
        var bytes: [UInt8]
        var ending: Ending

        /// The bytes after the header's blank line.
        var body: [UInt8] {
            let marker: [UInt8] = [13, 10, 13, 10]
            guard bytes.count >= 4,
                let index = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == marker })
            else { return [] }
            return Array(bytes[(index + 4)...])
        }
    }

    /// Connects to `127.0.0.1:port`, checks the server's certificate against `trustPEM` for `serverName`, sends a GET
    /// (or `method`) for `target` with `Connection: close` and `headers`, and reads until the connection ends or
    /// `limit` passes. Without a `limit`, 10 s stretched by the time scale (a deadline); a `limit` given is the test's
    /// own timing (leaving a response early) and is taken as it is.
    static func get(
        port: Int, target: String, trustPEM: String, serverName: String = "localhost", limit: TimeAmount? = nil,
        headers: [String: String] = [:], method: String = "GET"
    ) async throws -> Result {
        let limit = limit ?? TimeAmount(scaled(.seconds(10)))
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustPEM.utf8)))
        // Leaving at the limit closes TCP right after close_notify, as a client that gives up does; NIOSSL's
        // default would keep reading for 5 s, waiting for the server's close_notify.
        configuration.shutdownTimeout = .zero
        let context = try NIOSSLContext(configuration: configuration)
        let collected = NIOLockedValueBox<(bytes: [UInt8], ending: Ending?)>(([], nil))
        let done = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(Collector(collected: collected, done: done))
                }
            }
        let channel = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
        let fields = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\r\n" }.joined()
        let request = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\(fields)\r\n"
        // The limit runs from the connect: a stalled handshake holds the request in NIOSSL's buffer, so its write
        // would never complete. A failed handshake closes the channel before the request is written; the ending
        // says why.
        let timeout = channel.eventLoop.scheduleTask(in: limit) {
            collected.withLockedValue { if $0.ending == nil { $0.ending = .timedOut } }
            channel.close(promise: nil)
        }
        channel.writeAndFlush(channel.allocator.buffer(string: request), promise: nil)
        try? await done.futureResult.get()
        timeout.cancel()
        channel.close(promise: nil)
        return collected.withLockedValue { Result(bytes: $0.bytes, ending: $0.ending ?? .closeNotify) }
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let collected: NIOLockedValueBox<(bytes: [UInt8], ending: Ending?)>
        let done: EventLoopPromise<Void>

        init(collected: NIOLockedValueBox<(bytes: [UInt8], ending: Ending?)>, done: EventLoopPromise<Void>) {
            self.collected = collected
            self.done = done
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            collected.withLockedValue { $0.bytes += buffer.readableBytesView }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            let ending: Ending =
                if case NIOSSLError.uncleanShutdown = error { .uncleanShutdown } else {
                    .error(String(describing: error))
                }
            collected.withLockedValue { if $0.ending == nil { $0.ending = ending } }
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.succeed()
        }
    }
}
