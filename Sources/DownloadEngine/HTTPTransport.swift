import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The engine's HTTP/1.1 client for `http://` and `https://`, on SwiftNIO: `ClientBootstrap` on the shared event
/// loops, NIOHTTP1's encoder and decoder, NIOSSL for `https://`, and a keep-alive pool (``HTTPConnectionPool``).
///
/// Why not AsyncHTTPClient: measured on benchmark case 6 (500 × 256 KiB, `-j 8`) its per-request cost made
/// rangefetch slower than curl and aria2c; this client, like the blocking-socket one it replaced, is not. The
/// numbers are in docs/benchmarks.md, "Transport choice (issue 14)".
///
/// Each response is streamed by an ``HTTPExchange``: reads on demand, each part handed to the sink on the event
/// loop before the next read, parts before an error delivered before it. Nothing is decompressed and redirects are
/// returned, not followed (the engine handles both). A pooled connection that fails before the first byte of the
/// response is replaced by a new one and the request sent again, once: the engine only sends `GET`, which is
/// idempotent.
final class HTTPTransport: Transport, @unchecked Sendable {
    private let configuration: TransportConfiguration
    private let group: any EventLoopGroup
    private let pool: HTTPConnectionPool
    private let lock = NSLock()
    private var tlsContext: NIOSSLContext?
    /// Every connection opened and not yet closed: `shutdown()` closes those in flight too.
    private var open: [ObjectIdentifier: HTTPConnection] = [:]
    private var isShutDown = false

    init(configuration: TransportConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
        self.pool = HTTPConnectionPool(limit: configuration.connectionsPerHost)
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        guard configuration.proxy == nil else {
            throw DownloadError.invalidState("HTTP proxies are not supported yet (a proxy was configured)")
        }
        guard let target = HTTPTarget(request.url) else { throw DownloadError.invalidURL(request.url) }
        let head = try Self.requestHead(request, target)
        var mayReuse = true
        while true {
            let pooled = mayReuse ? pool.take(target.poolKey) : nil
            let connection: HTTPConnection
            if let pooled { connection = pooled } else { connection = try await connect(target, url: request.url) }
            let exchange = HTTPExchange(connection: connection, url: request.url, reused: pooled != nil, pool: pool)
            let responseHead: HTTPResponseHead
            do {
                responseHead = try await exchange.head(sending: head)
            } catch HTTPExchange.Failure.stale {
                // The server closed the kept-alive connection before it read the request: nothing of the response
                // arrived, so nothing is lost or repeated by sending it again on a new one.
                mayReuse = false
                continue
            }
            return TransportResponse(
                status: Int(responseHead.status.code),
                headers: responseHead.headers.map { ($0.name, $0.value) },
                body: TransportBody(
                    drain: { sink in try await exchange.drain(into: sink) },
                    abandon: { exchange.abandon() },
                    isComplete: { exchange.isComplete }))
        }
    }

    func shutdown() async {
        let connections = lock.withLock {
            isShutDown = true
            return Array(open.values)
        }
        await pool.shutdown()
        for connection in connections { try? await connection.channel.close() }
    }

    /// The number of idle pooled connections (for tests).
    var idleConnectionCount: Int { pool.idleCount }

    /// The number of connections open, idle or in use (for tests).
    var openConnectionCount: Int { lock.withLock { open.count } }

    // MARK: Connections

    private func connect(_ target: HTTPTarget, url: String) async throws -> HTTPConnection {
        try Task.checkCancellation()
        let tls = target.isSecure ? try makeTLSContext() : nil
        let peer = target.hostField
        let serverName = target.hostIsAddress ? nil : target.host
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(configuration.connectTimeAmount)
            .channelOption(ChannelOptions.autoRead, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(HTTPResponseHandler(peer: peer))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: target.host, port: target.port).get()
        } catch ChannelError.connectTimeout {
            throw DownloadError.connectTimeout(url)
        } catch {
            throw DownloadError.network("connect \(peer): \(error)")
        }
        let handler = try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: HTTPResponseHandler.self)
        }.get()
        let connection = HTTPConnection(channel: channel, handler: handler, key: target.poolKey, peer: peer)
        let id = ObjectIdentifier(connection)
        let accepted = lock.withLock {
            guard !isShutDown else { return false }
            open[id] = connection
            return true
        }
        guard accepted else {
            try? await channel.close()
            throw DownloadError.invalidState("the engine is shut down")
        }
        channel.closeFuture.whenComplete { _ in self.lock.withLock { _ = self.open.removeValue(forKey: id) } }
        // The TLS handshake reads before the first request asks to.
        if tls != nil { channel.read() }
        if Task.isCancelled {
            try? await channel.close()
            throw CancellationError()
        }
        return connection
    }

    private func makeTLSContext() throws -> NIOSSLContext {
        try lock.withLock {
            if let tlsContext { return tlsContext }
            var tls = TLSConfiguration.makeClientConfiguration()
            // HTTP/1.1 only: the segments of one file each need a connection of their own.
            tls.applicationProtocols = ["http/1.1"]
            switch configuration.trust {
            case .system:
                break
            case .certificates(let pem):
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
                } catch {
                    throw DownloadError.invalidState("the trusted certificates are not valid PEM: \(error)")
                }
            case .insecure:
                tls.certificateVerification = .none
            }
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: tls)
            } catch {
                throw DownloadError.network("TLS setup: \(error)")
            }
            tlsContext = context
            return context
        }
    }

    // MARK: Requests

    /// The request head: `GET`, the `Host` field, the engine's fields, nothing else.
    static func requestHead(_ request: TransportRequest, _ target: HTTPTarget) throws -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 1)
        headers.add(name: "Host", value: target.hostField)
        for (name, value) in request.headers {
            // A line break in a field would let a configured header smuggle in fields or a second request.
            guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") }),
                !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { throw DownloadError.invalidState("invalid request header '\(name)'") }
            headers.add(name: name, value: value)
        }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: target.requestTarget, headers: headers)
    }
}
