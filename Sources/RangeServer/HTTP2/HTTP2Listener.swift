import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// The HTTP/2 front end beside libmicrohttpd: `--h2-port` (TLS, ALPN `h2` and `http/1.1`) or `--h2c-port`
/// (cleartext, prior knowledge), on SwiftNIO and swift-nio-http2, answering every stream through the same
/// `RequestPipeline` as the libmicrohttpd daemons (see `HTTP2ConnectionHandler` and `HTTP2StreamHandler`).
///
/// The faults must reach the client as planned, so NIOHTTP2's own checks of what this server sends are off: a lying
/// Content-Length, a malformed Content-Range or a raw field would otherwise be stopped before the wire. What a client
/// sends is bounded instead (``Bounds``): concurrent streams, the header list, and resets per connection (the rapid
/// reset attack, CVE-2023-44487, which NIOHTTP2 answers with GOAWAY ENHANCE_YOUR_CALM).
final class HTTP2Listener: Sendable {
    /// What one connection may ask of the listener.
    struct Bounds: Sendable {
        /// SETTINGS_MAX_CONCURRENT_STREAMS announced to every client; a stream past it is refused.
        var maxConcurrentStreams = 100
        /// SETTINGS_MAX_HEADER_LIST_SIZE: the most bytes of a request's fields, as RFC 9113 §6.5.2 counts them.
        var maxHeaderListSize = 16 * 1024
        /// The most RST_STREAM frames a client may send in `resetWindow` before the connection is closed with
        /// GOAWAY ENHANCE_YOUR_CALM.
        var maxResets = 200
        var resetWindow: TimeAmount = .seconds(30)
    }

    /// The bound port.
    let port: Int
    /// Whether connections are TLS (`--h2-port`) or cleartext with prior knowledge (`--h2c-port`).
    let isTLS: Bool
    private let channel: any Channel
    private let connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>
    private let stopping: NIOLockedValueBox<Bool>

    /// Binds `host:port` (0 picks a free port); `tls` nil serves cleartext HTTP/2 with prior knowledge.
    ///
    /// - Throws: ``RangeServerError`` naming the option and address when the port cannot be bound or the TLS
    ///   identity cannot be loaded.
    init(
        host: String, port: Int, tls: TLSIdentity?, pipeline: RequestPipeline, counters: DaemonCounters,
        openExchanges: OpenExchanges, bodyLimit: (@Sendable (String) -> Int)?, bounds: Bounds = Bounds()
    ) throws {
        let option = tls == nil ? "--h2c-port" : "--h2-port"
        let context: NIOSSLContext?
        if let tls {
            do {
                let chain = try NIOSSLCertificate.fromPEMBytes(Array(tls.certificateChainPEM.utf8))
                let key = try NIOSSLPrivateKey(bytes: Array(tls.privateKeyPEM.utf8), format: .pem)
                var configuration = TLSConfiguration.makeServerConfiguration(
                    certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
                configuration.applicationProtocols = ["h2", "http/1.1"]
                context = try NIOSSLContext(configuration: configuration)
            } catch {
                throw RangeServerError.invalidConfiguration("\(option): cannot load the TLS identity: \(error)")
            }
        } else {
            context = nil
        }
        let connections = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
        let stopping = NIOLockedValueBox(false)
        let shared = HTTP2StreamHandler.Shared(
            pipeline: pipeline, counters: counters, openExchanges: openExchanges, bodyLimit: bodyLimit,
            isStopping: { stopping.withLockedValue { $0 } })
        let configuration = Self.configuration(bounds)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // Far above what the streams may hold in flight (`HTTP2StreamHandler.inFlightLimit` each, at most
            // `maxConcurrentStreams` of them), so the connection itself never stops being writable (see there).
            .childChannelOption(
                .writeBufferWaterMark, value: .init(low: 128 << 20, high: 256 << 20)
            )
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let id = counters.connections.wrappingAdd(1, ordering: .relaxed).newValue
                    let peer = HTTP2ConnectionState.peer(of: channel)
                    let state = HTTP2ConnectionState(
                        id: id, peerAddress: peer.address, peerPort: peer.port, isTLS: context != nil)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ConnectionTracker(connections: connections))
                    try sync.addHandler(SocketReadClock(connection: state))
                    guard let context else {
                        try Self.configureHTTP2(channel, state: state, shared: shared, configuration: configuration)
                        return
                    }
                    try sync.addHandler(ClientHelloPeeker(connection: state))
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.addHandler(
                        ApplicationProtocolNegotiationHandler { result in
                            channel.eventLoop.makeCompletedFuture {
                                switch result {
                                case .negotiated("h2"):
                                    state.alpn = "h2"
                                    try Self.configureHTTP2(
                                        channel, state: state, shared: shared, configuration: configuration)
                                case .negotiated(let other):
                                    state.alpn = other
                                    try Self.configureMisdirected(channel, state: state, shared: shared)
                                case .fallback:
                                    try Self.configureMisdirected(channel, state: state, shared: shared)
                                }
                            }
                        })
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw RangeServerError.bindFailed("\(option): cannot listen on \(address): \(error)")
        }
        self.port = channel.localAddress?.port ?? 0
        self.isTLS = context != nil
        self.connections = connections
        self.stopping = stopping
    }

    /// NIOHTTP2's configuration for these bounds, with its checks of outbound headers and lengths off.
    private static func configuration(_ bounds: Bounds) -> NIOHTTP2Handler.Configuration {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: bounds.maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: bounds.maxHeaderListSize),
            // A window large enough that an upload to a custom route is not held to 64 KiB a round trip.
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
        ]
        connection.headerBlockValidation = .disabled
        connection.contentLengthValidation = .disabled
        // No stream multiplexer reads the stream settings of windows and watermarks: `HTTP2ConnectionHandler` gives
        // back a request body's window as it arrives, and a stream bounds what it holds in flight itself.
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamResetFrameRateLimit.maximumCount = bounds.maxResets
        stream.streamResetFrameRateLimit.windowLength = bounds.resetWindow
        return NIOHTTP2Handler.Configuration(connection: connection, stream: stream)
    }

    private static func configureHTTP2(
        _ channel: any Channel, state: HTTP2ConnectionState, shared: HTTP2StreamHandler.Shared,
        configuration: NIOHTTP2Handler.Configuration
    ) throws {
        let sync = channel.pipeline.syncOperations
        let closer = ConnectionCloser()
        try sync.addHandler(closer)
        state.closer = closer
        // Without a stream multiplexer: NIOHTTP2Handler passes frames on, and `HTTP2ConnectionHandler` keeps the
        // streams (see there for why).
        try sync.addHandler(
            NIOHTTP2Handler(
                mode: .server, connectionConfiguration: configuration.connection,
                streamConfiguration: configuration.stream))
        try sync.addHandler(HTTP2ConnectionHandler(shared: shared, connection: state))
    }

    private static func configureMisdirected(
        _ channel: any Channel, state: HTTP2ConnectionState, shared: HTTP2StreamHandler.Shared
    ) throws {
        let sync = channel.pipeline.syncOperations
        try sync.configureHTTPServerPipeline(withErrorHandling: true)
        try sync.addHandler(MisdirectedHTTP1Handler(shared: shared, connection: state))
    }

    /// Closes the listener and every connection on it.
    func stop() {
        stopping.withLockedValue { $0 = true }
        try? channel.close().wait()
        let open = connections.withLockedValue { table in
            defer { table.removeAll() }
            return Array(table.values)
        }
        for connection in open { try? connection.close().wait() }
    }
}

/// Keeps the listener's table of open connections, so `stop()` can close them.
private final class ConnectionTracker: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    private let connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>

    init(connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { $0[ObjectIdentifier(channel)] = channel }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) }
        context.fireChannelInactive()
    }
}
