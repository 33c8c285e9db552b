import Foundation
import NIOCore

/// The engine's HTTP/1.1 client for every request through an HTTP proxy, on SwiftNIO's codecs (NIOHTTP1's request
/// encoder and response decoder, NIOSSL inside tunnels): `http://` URLs in absolute form to the proxy itself,
/// `https://` URLs through a `CONNECT` tunnel of its own (see ``ProxyWire`` for what goes on the wire).
///
/// Of its own rather than AsyncHTTPClient's proxy support, which tunnels `http://` URLs too (a proxy whose rules allow
/// `CONNECT` only to port 443, as squid's shipped ones do, refuses them) and keeps the status of a refused `CONNECT`
/// to itself (apart from a `407`), so a `403` looked like a network error and was retried.
///
/// What it shares with the direct client (``HTTPTransport``): the request's fields and their checks, the response
/// bridge (``ResponseBodyStream``: the same backpressure and the same bound on what a `kill -9` costs), the TLS
/// settings (``ProxyTLS``), the connect timeout (here covering the `CONNECT` and the handshake too) and the error
/// translation; the engine above sees the same ``TransportResponse``.
///
/// Kept-alive connections wait in a pool: per proxy for `http://` requests (any origin may follow on the same
/// connection), per proxy, origin and credentials for tunnels; at most ``TransportConfiguration/connectionsPerHost``
/// idle ones per pool, each closed after the configuration's `idleConnectionTimeout`. A request takes an idle connection or opens one; nothing
/// waits for a busy one.
final class ProxyClient: @unchecked Sendable {

    /// Which connections may carry a request.
    private struct Key: Hashable {
        var proxy: DownloadConfiguration.Proxy.Server
        /// The origin, `host:port`, of a tunnel; `nil` for connections to the proxy itself.
        var tunnel: String?
        /// The `CONNECT`'s credentials, which the tunnel was opened with.
        var authorization: String?
    }

    private struct Idle {
        var connection: ProxyConnection
        var timer: Scheduled<Void>
    }

    private let configuration: TransportConfiguration
    private let tls: ProxyTLS
    private let lock = NSLock()
    /// Guarded by `lock`, as are the two below.
    private var idle: [Key: [Idle]] = [:]
    /// Every open connection, idle or busy, for `shutdown()`.
    private var open: [ObjectIdentifier: ProxyConnection] = [:]
    private var isShutDown = false

    init(configuration: TransportConfiguration) {
        self.configuration = configuration
        self.tls = ProxyTLS(trust: configuration.trust)
    }

    /// Sends `request` through `proxy` and returns once the response head arrived.
    ///
    /// - Throws: ``DownloadError`` (a refusal of the proxy's own, named by ``ProxyWire/refusal``; a connect failure
    ///   naming the proxy), or `CancellationError`.
    func execute(
        _ request: TransportRequest, through proxy: DownloadConfiguration.Proxy.Server
    ) async throws -> TransportResponse {
        let origin = try ProxyWire.origin(of: request.url)
        let authorization = ProxyWire.authorization(for: proxy, request: request.headers)
        let head = try ProxyWire.requestHead(
            request, to: origin, tunnelled: origin.isTLS, authorization: authorization)
        let key = Key(
            proxy: proxy, tunnel: origin.isTLS ? origin.authority : nil,
            authorization: origin.isTLS ? authorization : nil)
        let peer = HTTPTransport.Peer(origin: origin.authority, proxy: "proxy \(proxy)")
        let plan = ProxyConnection.Plan(
            proxy: proxy,
            tunnel: origin.isTLS ? .init(origin: origin, authorization: authorization) : nil,
            deadline: .now() + configuration.connectTimeAmount)
        let connection: ProxyConnection
        do {
            connection = try await acquire(key, plan)
        } catch {
            throw HTTPTransport.translate(error, url: request.url, peer: peer)
        }
        let stream = ResponseBodyStream(pacing: request.pacing)
        connection.send(head, into: stream) { [weak self] reusable in
            self?.release(connection, to: key, reusable: reusable)
        }
        let response = try await HTTPTransport.response(of: stream, url: request.url, peer: peer)
        if !origin.isTLS, ProxyWire.isProxysOwnRefusal(status: response.status, headers: response.headers) {
            response.body.abandon()
            throw ProxyWire.refusal(
                status: response.status, headers: response.headers, proxy: proxy,
                request: "GET \(origin.absoluteForm)", sentCredentials: authorization != nil)
        }
        return response
    }

    /// Closes every connection, idle or busy, and waits until they are closed; requests under way fail.
    func shutdown() async {
        for connection in close() { try? await connection.channel.closeFuture.get() }
    }

    /// Starts closing every connection and returns them; no connection is made or kept afterwards.
    @discardableResult
    func close() -> [ProxyConnection] {
        let connections = lock.withLock {
            isShutDown = true
            for pool in idle.values { for entry in pool { entry.timer.cancel() } }
            idle = [:]
            return Array(open.values)
        }
        for connection in connections { connection.channel.close(promise: nil) }
        return connections
    }

    // MARK: The pool

    /// An idle connection of `key`, or a new one.
    ///
    /// Cancelling the caller returns at once; a connection still being opened then joins the pool when it is ready.
    private func acquire(_ key: Key, _ plan: ProxyConnection.Plan) async throws -> ProxyConnection {
        if let reused = takeIdle(key) { return reused }
        let race = OpenRace()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.wait(continuation)
                Task {
                    let result: Result<ProxyConnection, any Error>
                    do {
                        result = .success(try await self.opened(try await ProxyConnection.open(plan, tls: self.tls)))
                    } catch {
                        result = .failure(error)
                    }
                    if !race.finish(result), case .success(let connection) = result {
                        self.release(connection, to: key, reusable: true)
                    }
                }
            }
        } onCancel: {
            _ = race.finish(.failure(CancellationError()))
        }
    }

    /// Registers a new connection for `shutdown()`, or closes it when the client was shut down meanwhile.
    private func opened(_ connection: ProxyConnection) async throws -> ProxyConnection {
        let id = ObjectIdentifier(connection)
        let accepted = lock.withLock {
            guard !isShutDown else { return false }
            open[id] = connection
            return true
        }
        guard accepted else {
            try? await connection.channel.close()
            throw DownloadError.invalidState("the transport is shut down")
        }
        connection.channel.closeFuture.whenComplete { [weak self] _ in self?.forget(connection) }
        return connection
    }

    private func takeIdle(_ key: Key) -> ProxyConnection? {
        lock.withLock {
            while let entry = idle[key]?.popLast() {
                entry.timer.cancel()
                if entry.connection.channel.isActive { return entry.connection }
            }
            return nil
        }
    }

    /// Puts a connection whose exchange ended back in its pool, or closes it.
    private func release(_ connection: ProxyConnection, to key: Key, reusable: Bool) {
        let kept = lock.withLock {
            guard reusable, !isShutDown, connection.channel.isActive,
                idle[key, default: []].count < max(1, configuration.connectionsPerHost)
            else { return false }
            let timer = connection.channel.eventLoop.scheduleTask(
                in: TimeAmount(configuration.idleConnectionTimeout)
            ) {
                connection.channel.close(promise: nil)
            }
            idle[key, default: []].append(Idle(connection: connection, timer: timer))
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// Drops a closed connection from the pool.
    private func forget(_ connection: ProxyConnection) {
        lock.withLock {
            open[ObjectIdentifier(connection)] = nil
            for (key, pool) in idle where pool.contains(where: { $0.connection === connection }) {
                idle[key] = pool.filter { $0.connection !== connection }
            }
        }
    }
}

/// A connection being opened and the request waiting for it, which may give up first (its task was cancelled).
private final class OpenRace: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<ProxyConnection, any Error>?
    private var finished = false

    func wait(_ continuation: CheckedContinuation<ProxyConnection, any Error>) {
        let cancelled = lock.withLock {
            if finished { return true }
            self.continuation = continuation
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
    }

    /// Resumes the waiting request with `result` unless it was resumed before; returns whether it was resumed now.
    func finish(_ result: Result<ProxyConnection, any Error>) -> Bool {
        let continuation: CheckedContinuation<ProxyConnection, any Error>?? = lock.withLock {
            if finished { return .none }
            finished = true
            defer { self.continuation = nil }
            return .some(self.continuation)
        }
        guard case .some(let waiting) = continuation else { return false }
        waiting?.resume(with: result)
        return true
    }
}
