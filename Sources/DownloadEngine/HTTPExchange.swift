import Foundation
import NIOCore
import NIOHTTP1

/// One request on one connection of ``HTTPTransport``: sends it, hands the head to the awaiting task and the body
/// to a ``BodySink``, and gives the connection back to the pool or closes it.
///
/// Everything but ``isComplete`` runs on the connection's event loop, so its state needs no lock. The channel reads
/// on demand (auto-read is off): after each read the exchange asks for the next one only while the sink has taken
/// every part, or, before the drain started, while fewer than ``highWater`` bytes wait in `held`. A part reaches the
/// sink in `channelRead`, before the next read is asked for; a part in the sink's hands is the only received byte not
/// yet written, which bounds what a `kill -9` costs.
///
/// Parts that arrived before an error are delivered before the error (held parts first, by the drain), so a resume
/// keeps them. On a pooled connection that fails before any part of the response, the head fails with
/// ``Failure/stale`` and the transport sends the request again on a new connection.
final class HTTPExchange: @unchecked Sendable {
    /// Bytes held before the drain starts, at most (then reading stops until the drain takes them).
    static let highWater = 4 << 20

    /// Why the head did not come.
    enum Failure: Error {
        /// A reused connection ended before any byte of the response: the server closed it while it was idle.
        case stale
    }

    let connection: HTTPConnection
    private let url: String
    private let reused: Bool
    private let pool: HTTPConnectionPool
    private let headPromise: EventLoopPromise<HTTPResponseHead>

    private var receivedAny = false
    private var headSettled = false
    private var keepAlive = false
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
    private var readPaused = false
    private var sink: (any BodySink)?
    private var drainPromise: EventLoopPromise<Void>?
    /// The transport's last word on the body: ended, or failed.
    private var ending: Result<Void, any Error>?
    /// The drain's result, once known; from then on no part reaches the sink.
    private var resolution: Result<Void, any Error>?

    private let lock = NSLock()
    private var endedCleanly = false

    init(connection: HTTPConnection, url: String, reused: Bool, pool: HTTPConnectionPool) {
        self.connection = connection
        self.url = url
        self.reused = reused
        self.pool = pool
        self.headPromise = connection.channel.eventLoop.makePromise()
    }

    private var eventLoop: any EventLoop { connection.channel.eventLoop }

    // MARK: Async side

    /// Sends `request` and returns the response head; cancelling the calling task cancels the request.
    func head(sending request: HTTPRequestHead) async throws -> HTTPResponseHead {
        eventLoop.execute { self.send(request) }
        return try await withTaskCancellationHandler {
            try await headPromise.futureResult.get()
        } onCancel: {
            eventLoop.execute { self.cancel() }
        }
    }

    /// Feeds the held parts, then every later one, to `sink`; returns when the body ended or the sink declined more,
    /// after the sink's last call.
    func drain(into sink: any BodySink) async throws {
        let promise = eventLoop.makePromise(of: Void.self)
        eventLoop.execute { self.startDrain(sink, promise) }
        try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            eventLoop.execute { self.cancel() }
        }
    }

    /// Whether the whole body has arrived (and waits in `held` unless the drain took it).
    var isComplete: Bool { lock.withLock { endedCleanly } }

    /// Gives the body up; a request still running is cancelled and its connection closed.
    func abandon() {
        eventLoop.execute { self.cancel() }
    }

    // MARK: Event loop side

    private func send(_ request: HTTPRequestHead) {
        guard ending == nil else { return }
        let channel = connection.channel
        connection.handler.exchange = self
        channel.write(HTTPClientRequestPart.head(request), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { self.failed($0) }
        channel.read()
    }

    /// A decoded part of the response, from the handler.
    func received(_ part: HTTPClientResponsePart) {
        receivedAny = true
        switch part {
        case .head(let head):
            guard !headSettled else { return failed(DownloadError.malformedResponse("a second response head")) }
            headSettled = true
            keepAlive = head.isKeepAlive
            headPromise.succeed(head)
        case .body(let buffer):
            guard resolution == nil, ending == nil else { return }
            if let sink {
                _ = deliver(buffer, to: sink)
            } else {
                held.append(buffer)
                heldBytes += buffer.readableBytes
            }
        case .end:
            finish(.success(()))
        }
    }

    /// The end of one read from the socket: asks for the next unless the held parts reached the high-water mark.
    func readComplete() {
        guard ending == nil else { return }
        if sink == nil, heldBytes >= Self.highWater {
            readPaused = true
        } else {
            connection.channel.read()
        }
    }

    /// The connection failed or closed while this exchange was on it.
    func failed(_ error: any Error) {
        guard ending == nil else { return }
        finish(.failure(error))
    }

    private func cancel() {
        guard ending == nil else { return }
        finish(.failure(CancellationError()))
    }

    private func startDrain(_ sink: any BodySink, _ promise: EventLoopPromise<Void>) {
        drainPromise = promise
        if let resolution { return promise.completeWith(resolution) }
        let parts = held
        held = []
        heldBytes = 0
        for part in parts {
            guard deliver(part, to: sink) else { return }
        }
        if let ending { return resolve(ending) }
        self.sink = sink
        if readPaused {
            readPaused = false
            connection.channel.read()
        }
    }

    /// Gives one part to the sink; when the sink is done with the body (declined more, or threw) the drain resolves
    /// and the request is cancelled.
    private func deliver(_ part: ByteBuffer, to sink: any BodySink) -> Bool {
        do {
            if try sink.consume(part) { return true }
            resolve(.success(()))
        } catch {
            resolve(.failure(error))
        }
        cancel()
        return false
    }

    private func resolve(_ result: Result<Void, any Error>) {
        guard resolution == nil else { return }
        resolution = result
        drainPromise?.completeWith(result)
    }

    /// Records how the response ended, tells whoever waits, and releases the connection: back to the pool after a
    /// clean end both sides allow to reuse, closed otherwise.
    private func finish(_ result: Result<Void, any Error>) {
        let result = result.mapError { translate($0) }
        ending = result
        if connection.handler.exchange === self { connection.handler.exchange = nil }
        switch result {
        case .success:
            lock.withLock { endedCleanly = true }
            if keepAlive { pool.keep(connection) } else { connection.channel.close(promise: nil) }
        case .failure(let error):
            connection.channel.close(promise: nil)
            guard !headSettled else { break }
            headSettled = true
            headPromise.fail(reused && !receivedAny && !(error is CancellationError) ? Failure.stale : error)
        }
        if sink != nil { resolve(result) }
    }

    private func translate(_ error: any Error) -> any Error {
        switch error {
        case is CancellationError, is DownloadError: error
        case let error as HTTPParserError: DownloadError.malformedResponse("\(error) from \(connection.peer)")
        case ChannelError.ioOnClosedChannel, ChannelError.eof, ChannelError.outputClosed:
            DownloadError.network("connection to \(connection.peer) closed")
        default: DownloadError.network("\(connection.peer): \(error)")
        }
    }
}
