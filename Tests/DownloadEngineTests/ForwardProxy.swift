import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A forward HTTP proxy on loopback for the proxy tests: `CONNECT host:port` tunnels, which is all AsyncHTTPClient
/// sends to a proxy (for `http://` URLs too). Any other request line is answered with 405 and recorded all the same,
/// so a client that sent absolute-form requests would show in ``requests``.
///
/// Every request head is recorded before it is acted on: ``requests`` is the witness that a download went through
/// the proxy.
final class ForwardProxy: Sendable {
    /// One request head the proxy received.
    struct Request: Sendable, Hashable {
        /// The request line, e.g. `CONNECT 127.0.0.1:8080 HTTP/1.1`.
        var line: String
        /// The header fields, lower-case names.
        var headers: [String: String]
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    private let channel: any Channel
    private let recorded: NIOLockedValueBox<[Request]>

    private init(port: Int, channel: any Channel, recorded: NIOLockedValueBox<[Request]>) {
        self.port = port
        self.channel = channel
        self.recorded = recorded
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// The request heads received so far, in order.
    var requests: [Request] { recorded.withLockedValue { $0 } }

    /// Starts a proxy on an ephemeral loopback port.
    static func start() async throws -> ForwardProxy {
        let recorded = NIOLockedValueBox<[Request]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectHandler(recorded: recorded))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ForwardProxy(port: channel.localAddress?.port ?? 0, channel: channel, recorded: recorded)
    }

    /// Stops listening; open tunnels end with their connections.
    func stop() async {
        try? await channel.close()
    }
}

/// Runs `body` with a ``ForwardProxy`` that is stopped after, whether `body` returned or threw.
func withForwardProxy<T>(_ body: (ForwardProxy) async throws -> T) async throws -> T {
    let proxy = try await ForwardProxy.start()
    do {
        let result = try await body(proxy)
        await proxy.stop()
        return result
    } catch {
        await proxy.stop()
        throw error
    }
}

/// Reads a request head, then opens the tunnel (or refuses); once the tunnel is open it is replaced by a
/// ``GlueHandler`` pair.
private final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let recorded: NIOLockedValueBox<[ForwardProxy.Request]>
    private var head = ByteBuffer()
    private var connecting = false

    init(recorded: NIOLockedValueBox<[ForwardProxy.Request]>) { self.recorded = recorded }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        head.writeBuffer(&bytes)
        let view = head.readableBytesView
        guard !connecting, let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
        connecting = true
        // What follows the head stays in `head`: it belongs to the tunnel (a client normally waits for the 200).
        let text = head.readString(length: view.distance(from: view.startIndex, to: end.upperBound)) ?? ""
        let lines = text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        recorded.withLockedValue { $0.append(ForwardProxy.Request(line: lines.first ?? "", headers: headers)) }
        let parts = (lines.first ?? "").split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT", let colon = parts[1].lastIndex(of: ":"),
            let port = Int(parts[1][parts[1].index(after: colon)...])
        else {
            return answer(context, "405 Method Not Allowed")
        }
        let host = String(parts[1][..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        ClientBootstrap(group: context.eventLoop).connect(host: host, port: port).assumeIsolated().whenComplete {
            result in
            switch result {
            case .success(let upstream):
                self.tunnel(context, to: upstream)
            case .failure:
                self.answer(context, "502 Bad Gateway")
            }
        }
    }

    private func answer(_ context: ChannelHandlerContext, _ status: String) {
        let response = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Answers 200 and joins the client's channel and `upstream` (on the same event loop) with a glue pair.
    private func tunnel(_ context: ChannelHandlerContext, to upstream: any Channel) {
        let established = "HTTP/1.1 200 Connection Established\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: established)), promise: nil)
        let (near, far) = GlueHandler.pair()
        do {
            try context.pipeline.syncOperations.addHandler(near)
            try upstream.pipeline.syncOperations.addHandler(far)
        } catch {
            context.close(promise: nil)
            upstream.close(promise: nil)
            return
        }
        if head.readableBytes > 0 { far.write(head) }
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }
}

/// Copies every byte read on one channel to its partner's channel, and closes the partner when its channel closes.
/// Both channels are on one event loop, so the pair never crosses threads.
private final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?

    static func pair() -> (GlueHandler, GlueHandler) {
        let first = GlueHandler()
        let second = GlueHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    /// Writes `buffer` to this handler's channel.
    func write(_ buffer: ByteBuffer) {
        context?.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.write(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
