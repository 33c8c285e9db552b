import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A forward HTTP proxy on loopback for the proxy tests, on NIOHTTP1's codecs: absolute-form requests
/// (`GET http://host:port/path`) are forwarded to the origin, one upstream connection per request, and the client's
/// connection is kept alive between them; `CONNECT host:port` opens a tunnel. Like any proxy it drops
/// `Proxy-Authorization` before forwarding, and a response cut upstream is cut downstream too.
///
/// Every request head is recorded before it is acted on: ``requests`` is the witness that a download went through
/// the proxy, ``connections`` how many client connections carried them. With ``Options/credentials`` it answers
/// `407` to a request without them; with ``Options/refusal`` it answers that status to every request.
final class ForwardProxy: Sendable {
    /// One request head the proxy received.
    struct Request: Sendable, Hashable {
        /// The request line, e.g. `CONNECT 127.0.0.1:8080 HTTP/1.1` or `GET http://127.0.0.1:8080/x HTTP/1.1`.
        var line: String
        /// The header fields, lower-case names.
        var headers: [String: String]
    }

    /// How the proxy answers.
    struct Options: Sendable {
        /// The `Proxy-Authorization` value it wants; `nil` serves everyone.
        var credentials: String?
        /// A status it answers to every request instead of serving it, with `marks` among its fields.
        var refusal: Int?
        /// Fields of its refusals (`X-Squid-Error`, `Proxy-Status`).
        var marks: [(String, String)] = []
        /// The loopback address it listens on.
        var host = "127.0.0.1"
        /// Every tunnel goes to 127.0.0.1 on this port, whatever the `CONNECT` asked for: a proxy that intercepts.
        var tunnelPort: Int?
    }

    /// The port it listens on.
    let port: Int
    /// The address it listens on, 127.0.0.1 unless ``Options/host`` says otherwise.
    let host: String
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var requests: [Request] = []
        var connections = 0
    }

    private init(host: String, port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.host = host
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// `http://HOST:PORT`.
    var url: String { "http://\(host):\(port)" }

    /// The request heads received so far, in order.
    var requests: [Request] { state.withLockedValue { $0.requests } }

    /// The client connections accepted so far.
    var connections: Int { state.withLockedValue { $0.connections } }

    /// Starts a proxy on an ephemeral loopback port.
    static func start(_ options: Options = .init()) async throws -> ForwardProxy {
        let state = NIOLockedValueBox(State())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                state.withLockedValue { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(HTTPResponseEncoder())
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
                    try sync.addHandler(ProxyHandler(state: state, options: options))
                }
            }
            .bind(host: options.host, port: 0).get()
        return ForwardProxy(host: options.host, port: channel.localAddress?.port ?? 0, channel: channel, state: state)
    }

    /// Stops listening; open connections end with their peers.
    func stop() async {
        try? await channel.close()
    }
}

/// Runs `body` with a ``ForwardProxy`` that is stopped after, whether `body` returned or threw.
func withForwardProxy<T>(
    _ options: ForwardProxy.Options = .init(), _ body: (ForwardProxy) async throws -> T
)
    async throws -> T
{
    let proxy = try await ForwardProxy.start(options)
    do {
        let result = try await body(proxy)
        await proxy.stop()
        return result
    } catch {
        await proxy.stop()
        throw error
    }
}

/// The client side of one proxy connection: one request at a time, forwarded or tunnelled.
private final class ProxyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: NIOLockedValueBox<ForwardProxy.State>
    private let options: ForwardProxy.Options
    private var upstream: (any Channel)?
    private var pendingRequest: HTTPRequestHead?

    init(state: NIOLockedValueBox<ForwardProxy.State>, options: ForwardProxy.Options) {
        self.state = state
        self.options = options
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var headers: [String: String] = [:]
            for (name, value) in head.headers { headers[name.lowercased()] = value }
            let line = "\(head.method.rawValue) \(head.uri) HTTP/\(head.version.major).\(head.version.minor)"
            state.withLockedValue { $0.requests.append(.init(line: line, headers: headers)) }
            pendingRequest = head
        case .body:
            break
        case .end:
            guard let head = pendingRequest else { return }
            pendingRequest = nil
            serve(head, context: context)
        }
    }

    private func serve(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        if let wanted = options.credentials, head.headers.first(name: "proxy-authorization") != wanted {
            return answer(context, .proxyAuthenticationRequired, [("Proxy-Authenticate", "Basic realm=\"test\"")])
        }
        if let refusal = options.refusal {
            return answer(context, HTTPResponseStatus(statusCode: refusal), options.marks)
        }
        if head.method == .CONNECT {
            return tunnel(head.uri, context: context)
        }
        forward(head, context: context)
    }

    private func answer(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ fields: [(String, String)] = []
    ) {
        let body = ByteBuffer(string: "refused by the test proxy\n")
        var headers = HTTPHeaders(fields)
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        context.write(wrapOutboundOut(.head(.init(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// `host:port` split, brackets removed.
    private static func split(_ authority: Substring) -> (host: String, port: Int)? {
        guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...])
        else { return nil }
        return (String(authority[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }

    /// An absolute-form request: sent to the origin in origin form without the proxy's fields, its response
    /// relayed part by part; a cut upstream closes the client's connection.
    private func forward(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let components = URLComponents(string: head.uri), components.scheme == "http",
            let host = components.host
        else { return answer(context, .badRequest) }
        var outgoing = head
        outgoing.uri =
            (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath)
            + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        outgoing.headers.remove(name: "proxy-authorization")
        outgoing.headers.remove(name: "proxy-connection")
        let downstream = context.channel
        let relay = NIOLoopBound(context, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Relay(downstream: downstream))
                }
            }
            .connect(host: host, port: components.port ?? 80)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let upstream):
                    upstream.write(HTTPClientRequestPart.head(outgoing), promise: nil)
                    upstream.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                case .failure:
                    self.answer(relay.value, .badGateway)
                }
            }
    }

    /// `CONNECT`: answers 200 and joins the client's channel and the origin's with a glue pair.
    private func tunnel(_ authority: String, context: ChannelHandlerContext) {
        guard var (host, port) = Self.split(Substring(authority)) else { return answer(context, .badRequest) }
        if let intercepted = options.tunnelPort { (host, port) = ("127.0.0.1", intercepted) }
        ClientBootstrap(group: context.eventLoop).connect(host: host, port: port).assumeIsolated().whenComplete {
            result in
            switch result {
            case .success(let upstream):
                let (near, far) = GlueHandler.pair()
                do {
                    let sync = context.pipeline.syncOperations
                    // The 200 in bytes, as a proxy writes it: the encoder would add framing a tunnel does not have.
                    sync.removeHandler(try sync.handler(type: HTTPResponseEncoder.self), promise: nil)
                    let established = ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")
                    context.channel.writeAndFlush(established, promise: nil)
                    try upstream.pipeline.syncOperations.addHandler(far)
                    try sync.addHandler(near)
                    // Bytes the decoder still holds go on to `near`, the next handler once this one is gone.
                    sync.removeHandler(self, promise: nil)
                    sync.removeHandler(
                        try sync.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self), promise: nil)
                } catch {
                    context.close(promise: nil)
                    upstream.close(promise: nil)
                }
            case .failure:
                self.answer(context, .badGateway)
            }
        }
    }
}

/// The upstream side of a forwarded request: relays the response to the client's channel; closes the client's
/// connection when the response is cut (so the client sees the cut), and its own once the response ended.
private final class Relay: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let downstream: any Channel
    private var ended = false

    init(downstream: any Channel) { self.downstream = downstream }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var relayed = HTTPResponseHead(version: .http1_1, status: head.status, headers: head.headers)
            relayed.headers.remove(name: "connection")
            downstream.write(HTTPServerResponsePart.head(relayed), promise: nil)
        case .body(let part):
            downstream.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(part)), promise: nil)
        case .end:
            ended = true
            downstream.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !ended { downstream.close(promise: nil) }
        context.fireChannelInactive()
    }
}

/// Copies every byte read on one channel to its partner's channel, and closes the partner when its channel closes.
/// Both channels are on one event loop, so the pair never crosses threads.
private final class GlueHandler: ChannelDuplexHandler, RemovableChannelHandler {
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
