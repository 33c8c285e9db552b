import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One connection through an HTTP proxy, ready for requests: to the proxy itself for `http://` URLs, or a tunnel to
/// one origin with TLS inside for `https://` URLs. Its pipeline ends in NIOHTTP1's request encoder and response
/// decoder and a ``ProxyExchangeHandler``; a tunnel has NIOSSL's client handler in front of them.
final class ProxyConnection: Sendable {
    /// The channel, to the proxy.
    let channel: any Channel
    private let exchange: NIOLoopBound<ProxyExchangeHandler>

    private init(channel: any Channel, exchange: NIOLoopBound<ProxyExchangeHandler>) {
        self.channel = channel
        self.exchange = exchange
    }

    /// Sends `head` and feeds the response to `stream`, whose cancellation closes the connection while the exchange
    /// runs; `ended` is told on the event loop how the exchange ended: `true` when the connection can be used again.
    func send(_ head: HTTPRequestHead, into stream: ResponseBodyStream, ended: @escaping @Sendable (Bool) -> Void) {
        let exchange = self.exchange
        let eventLoop = channel.eventLoop
        // The stream keeps its cancel action for as long as it lives: capturing the stream strongly here made a
        // cycle (stream → action → stream) that kept every proxied response, and what it held, alive for good
        // (LeakSanitizer found them at rangefetch's exit).
        stream.attach(eventLoop: eventLoop) { [weak stream] in
            guard let stream else { return }
            eventLoop.execute { exchange.value.cancel(stream) }
        }
        eventLoop.execute { exchange.value.start(head, into: stream, ended: ended) }
    }

    /// How a connection is opened.
    struct Plan: Sendable {
        var proxy: DownloadConfiguration.Proxy.Server
        /// The tunnel's origin and the `CONNECT`'s `Proxy-Authorization`; `nil` for a connection to the proxy itself.
        var tunnel: Tunnel?
        /// Connecting, the `CONNECT` and the TLS handshake must all be done by then.
        var deadline: NIODeadline
    }

    /// A tunnel to open.
    struct Tunnel: Sendable {
        var origin: ProxyWire.Origin
        var authorization: String?
    }

    /// What failed while opening a connection, besides NIO's and NIOSSL's errors.
    enum OpenFailure: Error {
        /// The deadline passed; `inHandshake`: during the TLS handshake inside the tunnel.
        case timedOut(inHandshake: Bool)
    }

    /// Connects to the proxy and, for a tunnel, sends the `CONNECT` and completes the TLS handshake.
    ///
    /// The deadline covers the `CONNECT` and the handshake too, as the connect timeout covers the handshake on a
    /// direct connection: a proxy or an origin that accepts and never answers is as down as one that never accepts.
    ///
    /// - Throws: ``OpenFailure``; the proxy's refusal of the `CONNECT` (``DownloadError/proxyRefused(_:proxy:detail:)``);
    ///   NIO's connect errors; NIOSSL's handshake errors; ``DownloadError/tlsCertificate(_:_:)`` for a certificate
    ///   that does not name the origin's address.
    static func open(_ plan: Plan, tls: ProxyTLS) async throws -> ProxyConnection {
        let remaining = plan.deadline - .now()
        guard remaining > .zero else { throw OpenFailure.timedOut(inHandshake: false) }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(remaining)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { [isTunnel = plan.tunnel != nil] channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        if isTunnel {
                            // Only the codecs, which `connect` removes after the CONNECT: NIO's default client
                            // handlers add a header validator that would stand in the way of the TLS bytes.
                            try sync.addHandler(HTTPRequestEncoder())
                            try sync.addHandler(ByteToMessageHandler(HTTPResponseDecoder()))
                        } else {
                            try sync.addHTTPClientHandlers()
                        }
                    }
                }
                .connect(host: plan.proxy.host, port: plan.proxy.port).get()
        } catch ChannelError.connectTimeout {
            throw OpenFailure.timedOut(inHandshake: false)
        }
        let timer = channel.eventLoop.scheduleTask(deadline: plan.deadline) { channel.close(promise: nil) }
        var inHandshake = false
        do {
            if let tunnel = plan.tunnel {
                let head = try await connect(channel, tunnel)
                guard (200...299).contains(Int(head.status.code)) else {
                    throw ProxyWire.refusal(
                        status: Int(head.status.code), headers: head.headers.map { ($0.name, $0.value) },
                        proxy: plan.proxy, request: "CONNECT \(tunnel.origin.authority)",
                        sentCredentials: tunnel.authorization != nil)
                }
                inHandshake = true
                try await handshake(channel, with: tunnel.origin, tls: tls)
            }
            let isTunnel = plan.tunnel != nil
            let exchange = try await channel.eventLoop.submit {
                let sync = channel.pipeline.syncOperations
                // The tunnel's first codecs went with its CONNECT; these speak HTTP inside TLS.
                if isTunnel { try sync.addHTTPClientHandlers() }
                let handler = ProxyExchangeHandler()
                try sync.addHandler(handler)
                return NIOLoopBound(handler, eventLoop: channel.eventLoop)
            }.get()
            timer.cancel()
            return ProxyConnection(channel: channel, exchange: exchange)
        } catch {
            timer.cancel()
            channel.close(promise: nil)
            // A task that ran has a succeeded future, a cancelled one a failed future.
            if (try? await timer.futureResult.get()) != nil { throw OpenFailure.timedOut(inHandshake: inHandshake) }
            throw error
        }
    }

    /// Sends the `CONNECT` and returns the proxy's response head; after a `2xx` the HTTP codecs are gone, so the
    /// next bytes are the tunnel's.
    private static func connect(_ channel: any Channel, _ tunnel: Tunnel) async throws -> HTTPResponseHead {
        let head = ProxyWire.connectHead(to: tunnel.origin, authorization: tunnel.authorization)
        let answered = channel.eventLoop.makePromise(of: HTTPResponseHead.self)
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(ProxyConnectHandler(head: head, answered: answered))
            }.get()
        } catch {
            answered.fail(error)
            throw error
        }
        let response = try await answered.futureResult.get()
        guard (200...299).contains(Int(response.status.code)) else { return response }
        try await channel.eventLoop.submit {
            let sync = channel.pipeline.syncOperations
            sync.removeHandler(try sync.handler(type: ProxyConnectHandler.self), promise: nil)
            sync.removeHandler(try sync.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self), promise: nil)
            sync.removeHandler(try sync.handler(type: HTTPRequestEncoder.self), promise: nil)
        }.get()
        return response
    }

    /// Runs the TLS handshake with the origin inside the tunnel, with the engine's trust.
    private static func handshake(_ channel: any Channel, with origin: ProxyWire.Origin, tls: ProxyTLS) async throws {
        let (context, serverName, address) = try tls.context(for: origin.host)
        let authority = origin.authority
        let done = channel.eventLoop.makePromise(of: Void.self)
        do {
            try await channel.eventLoop.submit {
                let sync = channel.pipeline.syncOperations
                try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                try sync.addHandler(ProxyHandshakeHandler(done: done, expectedAddress: address, origin: authority))
            }.get()
        } catch {
            done.fail(error)
            throw error
        }
        try await done.futureResult.get()
        try await channel.eventLoop.submit {
            let sync = channel.pipeline.syncOperations
            sync.removeHandler(try sync.handler(type: ProxyHandshakeHandler.self), promise: nil)
        }.get()
    }
}
