import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// The engine's HTTP client for `http://` and `https://`: AsyncHTTPClient for direct requests, redirects and
/// decompression off, each body streamed through a ``ResponseBodyStream`` delegate; and, for every request through
/// an HTTP proxy, the engine's own ``ProxyClient`` on SwiftNIO's codecs, feeding the same ``ResponseBodyStream``.
///
/// AsyncHTTPClient, not a client of our own, for direct requests: measured on benchmark case 6 (500 × 256 KiB,
/// `-j 8`), carrying `http://` through it made no difference against a lean NIOHTTP1 client (medians 1.11 and 1.10
/// of curl in alternating runs; docs/benchmarks.md, "Transport choice (issue 14)"). Its proxy support did not serve
/// (see ``ProxyClient``).
///
/// What the settings are for:
/// - HTTP/2 over TLS when ALPN chooses it (``DownloadConfiguration/HTTPVersion/automatic``), HTTP/1.1 otherwise. Over
///   HTTP/2 AsyncHTTPClient sends every request to an origin on one connection; the segments of one file must each
///   get a connection of their own, so a request with a ``TransportLane`` goes through a client of its lane's, with
///   a pool of its own (over HTTP/1.1 the shared pool already gives each request running at once its own
///   connection, and lanes are not needed).
/// - No connect retries inside the client: AsyncHTTPClient would otherwise retry a refused connect with backoff
///   until the connect timeout, hiding a down server from the engine's own retry policy (which counts and logs it).
/// - A request on a kept-alive connection that the server closes before answering fails with a network error and
///   is retried by the engine's retry policy like any other; AsyncHTTPClient does not send it again by itself, and
///   the transport cannot tell a reused connection from a new one, whose silent close is a fault to report. The
///   proxy client does the same.
final class HTTPTransport: Transport, @unchecked Sendable {
    private let client: HTTPClient
    private let proxies: ProxyClient
    private let configuration: TransportConfiguration
    /// The settings every `HTTPClient` of this transport is made with.
    private let settings: HTTPClient.Configuration
    private let lock = NSLock()
    private var isShutDown = false
    /// The clients of segments' lanes, under `lock` (see ``TransportLane``).
    private var laneClients: [TransportLane: HTTPClient] = [:]
    private static let silent = Logger(
        label: "DownloadEngine.HTTPTransport", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Creates the client.
    ///
    /// - Throws: ``DownloadError`` when the trust settings cannot be used (a CA file that cannot be read, PEM text
    ///   without a certificate).
    init(configuration: TransportConfiguration) throws {
        self.configuration = configuration
        var settings = HTTPClient.Configuration(
            tlsConfiguration: try Self.tlsConfiguration(configuration.trust),
            redirectConfiguration: .disallow,
            timeout: .init(connect: configuration.connectTimeAmount, read: nil),
            decompression: .disabled)
        settings.httpVersion = configuration.httpVersion == .http1Only ? .http1Only : .automatic
        // One kept-alive connection for each transfer that may run at once, so none queues behind another.
        settings.connectionPool = .init(
            idleTimeout: TimeAmount(configuration.idleConnectionTimeout),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.connectionsPerHost))
        settings.connectionPool.retryConnectionEstablishment = false
        // The pool's own events (a connection opened, released to the pool, closed) go to the same logger as the
        // requests': without them a request that waited for a new connection does not say why.
        self.settings = settings
        client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: settings,
            backgroundActivityLogger: configuration.logger ?? Self.silent)
        proxies = ProxyClient(configuration: configuration)
    }

    /// The client a request goes through: its lane's over HTTPS when HTTP/2 may be negotiated, else the shared one.
    private func client(for request: TransportRequest) -> HTTPClient {
        guard let lane = request.lane, configuration.httpVersion == .automatic,
            request.url.utf8.prefix(6).map({ $0 | 0x20 }).elementsEqual("https:".utf8)
        else { return client }
        return lock.withLock {
            if let existing = laneClients[lane] { return existing }
            var laneSettings = settings
            laneSettings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
            let made = HTTPClient(
                eventLoopGroupProvider: .singleton, configuration: laneSettings,
                backgroundActivityLogger: configuration.logger ?? Self.silent)
            laneClients[lane] = made
            return made
        }
    }

    func releaseLanes(of owner: Int) async {
        let released = lock.withLock {
            let lanes = laneClients.keys.filter { $0.owner == owner }
            return lanes.compactMap { laneClients.removeValue(forKey: $0) }
        }
        for laneClient in released { try? await laneClient.shutdown() }
    }

    deinit {
        // A transport dropped without `shutdown()` must not trap in HTTPClient's check that it was shut down, nor
        // leave connections to a proxy open.
        if !isShutDown {
            client.shutdown { _ in }
            for laneClient in laneClients.values { laneClient.shutdown { _ in } }
            proxies.close()
        }
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        // Under a bandwidth limit in debt, the request waits: a body that arrives in one read would never wait.
        if let pacing = request.pacing { try await pacing.waitBeforeRequest() }
        if let proxy = configuration.proxy.server(for: request.url) {
            return try await proxies.execute(request, through: proxy)
        }
        let outgoing = try Self.request(request)
        let origin =
            outgoing.host.contains(":") ? "[\(outgoing.host)]:\(outgoing.port)" : "\(outgoing.host):\(outgoing.port)"
        let stream = ResponseBodyStream(pacing: request.pacing)
        let task = client(for: request).execute(
            request: outgoing, delegate: stream, logger: configuration.logger ?? Self.silent)
        stream.attach(task)
        return try await Self.response(of: stream, url: request.url, peer: Peer(origin: origin))
    }

    /// The response of `stream` once its head arrived, with its body still streaming; errors translated for `peer`.
    static func response(of stream: ResponseBodyStream, url: String, peer: Peer) async throws -> TransportResponse {
        let head: HTTPResponseHead
        do {
            head = try await stream.head()
        } catch {
            throw translate(error, url: url, peer: peer, beforeHead: true, cancelledHere: stream.wasCancelled)
        }
        return TransportResponse(
            status: Int(head.status.code),
            headers: head.headers.map { ($0.name, $0.value) },
            body: TransportBody(
                drain: { sink in
                    do {
                        try await stream.drain(into: sink)
                    } catch {
                        throw translate(error, url: url, peer: peer, cancelledHere: stream.wasCancelled)
                    }
                },
                abandon: { stream.abandon() },
                isComplete: { stream.isComplete }))
    }

    func shutdown() async {
        let first = lock.withLock {
            defer { isShutDown = true }
            return !isShutDown
        }
        guard first else { return }
        try? await client.shutdown()
        let lanes = lock.withLock {
            defer { laneClients.removeAll() }
            return Array(laneClients.values)
        }
        for laneClient in lanes { try? await laneClient.shutdown() }
        await proxies.shutdown()
    }

    /// What an error message names: the origin, and the proxy a request went through.
    struct Peer: Sendable {
        var origin: String
        /// `proxy HOST:PORT`, for a request through a proxy.
        var proxy: String?

        /// What a failed connect names: the proxy when there is one, as that is what was connected to.
        var connected: String { proxy ?? origin }
    }

    // MARK: Pure parts

    /// The request AsyncHTTPClient sends: `GET`, the engine's fields, nothing else (AsyncHTTPClient adds `Host`).
    ///
    /// - Throws: ``DownloadError/invalidURL(_:)`` for anything but an `http://` or `https://` URL with a host;
    ///   ``DownloadError/invalidState(_:)`` for a field name or value that could smuggle in fields or a second
    ///   request.
    static func request(_ request: TransportRequest) throws -> HTTPClient.Request {
        let scheme = request.url.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else { throw DownloadError.invalidURL(request.url) }
        let headers = try fields(request.headers)
        do {
            return try HTTPClient.Request(url: request.url, method: .GET, headers: headers)
        } catch {
            throw DownloadError.invalidURL(request.url)
        }
    }

    /// The engine's fields as NIO's, checked: both clients send them so.
    ///
    /// - Throws: ``DownloadError/invalidState(_:)`` for a field name or value that could smuggle in fields or a
    ///   second request.
    static func fields(_ fields: [(name: String, value: String)]) throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for (name, value) in fields {
            guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") }),
                !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { throw DownloadError.invalidState("invalid request header '\(name)'") }
            headers.add(name: name, value: value)
        }
        return headers
    }

    /// The engine's error for what AsyncHTTPClient, the proxy client or NIO reported.
    ///
    /// - Parameter cancelledHere: whether the engine cancelled the request itself; AsyncHTTPClient's `cancelled`
    ///   is a `CancellationError` only then.
    static func translate(
        _ error: any Error, url: String, peer: Peer, beforeHead: Bool = false, cancelledHere: Bool = true
    ) -> any Error {
        if let proxy = peer.proxy {
            switch error {
            case ProxyConnection.OpenFailure.timedOut(let inHandshake):
                return inHandshake
                    ? DownloadError.tlsHandshakeTimeout(url) : DownloadError.connectTimeout("\(url) through \(proxy)")
            case ChannelError.connectTimeout:
                return DownloadError.connectTimeout("\(url) through \(proxy)")
            default:
                break
            }
        }
        if let tls = translateTLS(error, url: url, peer: peer.origin) { return tls }
        let connected = peer.connected
        let peer = peer.proxy.map { "\(peer.origin) (through \($0))" } ?? peer.origin
        switch error {
        case is CancellationError, is DownloadError:
            return error
        case let error as HTTPClientError:
            // Compared with `==`: in a `switch`, `.cancelled` does not match AsyncHTTPClient's static member.
            if error == HTTPClientError.connectTimeout { return DownloadError.connectTimeout(url) }
            if error == HTTPClientError.cancelled {
                if cancelledHere { return CancellationError() }
                // Not our cancellation: AsyncHTTPClient's pool gave the request to an HTTP/2 connection that was
                // already closing (a drop the pool had not yet heard of), which fails it as cancelled before any
                // byte was sent. Taken as a cancellation it paused the download (a TSan run, `drop-after` over h2).
                return beforeHead
                    ? DownloadError.unprocessed("the connection to \(peer) was closing before the request was sent")
                    : DownloadError.network("connection to \(peer) closed")
            }
            if error == HTTPClientError.remoteConnectionClosed {
                return DownloadError.network("connection to \(peer) closed")
            }
            return DownloadError.network("\(peer): \(error)")
        case is ResponseBodyStream.ConnectionClosed:
            return DownloadError.network("connection to \(peer) closed")
        case let error as NIOHTTP2Errors.StreamClosed:
            return translateStreamClosed(error.errorCode, peer: peer, beforeHead: beforeHead)
        case HTTPParserError.invalidEOFState:
            // The connection ended before the framing did (Content-Length not reached, no last chunk): a cut, not
            // garbage. Over TLS it arrives this way whether close_notify came or not: AsyncHTTPClient leaves a
            // framed body's early end to the parser.
            return DownloadError.network("connection to \(peer) closed before the end of the response")
        case let error as HTTPParserError:
            return DownloadError.malformedResponse("\(error) from \(peer)")
        case is NIOConnectionError:
            return DownloadError.connectFailed(connected, "\(error)")
        case let error as IOError where [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains(error.errnoCode):
            // How NIO reports a refused connect: only a connect can end this way before the request is sent.
            return DownloadError.connectFailed(connected, String(cString: strerror(error.errnoCode)))
        default:
            return DownloadError.network("\(peer): \(error)")
        }
    }
}

extension HTTPTransport {
    /// What an HTTP/2 stream the server closed becomes (docs/engine.md, "HTTP/2").
    ///
    /// Before any response head, REFUSED_STREAM, and CANCEL (the client's own close of a stream a GOAWAY left
    /// unprocessed, which is how AsyncHTTPClient reports one), mean the request was not processed: it is sent again
    /// at once. Any other code, and any close once the head arrived, is a network error resumed from the offset after
    /// the backoff, like a dropped connection: INTERNAL_ERROR and CANCEL mid-body, ENHANCE_YOUR_CALM before the head
    /// (the server asks for a pause, not a retry at once).
    static func translateStreamClosed(_ code: HTTP2ErrorCode, peer: String, beforeHead: Bool) -> DownloadError {
        let name = Self.name(of: code)
        if beforeHead && (code == .refusedStream || code == .cancel) {
            return .unprocessed("\(peer) closed the HTTP/2 stream before answering (\(name))")
        }
        // Either side's reset: the server's RST_STREAM, or NIOHTTP2's own on a malformed stream (a body short of
        // its content-length ends with PROTOCOL_ERROR).
        return .network("the HTTP/2 stream from \(peer) was reset (\(name))")
    }

    /// RFC 9113 §7's name of `code`, or its number.
    static func name(of code: HTTP2ErrorCode) -> String {
        let names: [HTTP2ErrorCode: String] = [
            .noError: "NO_ERROR", .protocolError: "PROTOCOL_ERROR", .internalError: "INTERNAL_ERROR",
            .flowControlError: "FLOW_CONTROL_ERROR", .settingsTimeout: "SETTINGS_TIMEOUT",
            .streamClosed: "STREAM_CLOSED", .frameSizeError: "FRAME_SIZE_ERROR", .refusedStream: "REFUSED_STREAM",
            .cancel: "CANCEL", .compressionError: "COMPRESSION_ERROR", .connectError: "CONNECT_ERROR",
            .enhanceYourCalm: "ENHANCE_YOUR_CALM", .inadequateSecurity: "INADEQUATE_SECURITY",
            .http11Required: "HTTP_1_1_REQUIRED",
        ]
        return names[code] ?? "0x\(String(code.networkCode, radix: 16))"
    }
}
