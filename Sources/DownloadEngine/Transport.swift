import AsyncHTTPClient
import Foundation
import HTTPVocabulary
import NIOCore
import NIOHTTP1

/// A request as the engine hands it to a transport: always `GET`, never followed.
struct TransportRequest: Sendable {
    var url: String
    var headers: [(name: String, value: String)]
}

/// A response head plus a body to stream.
struct TransportResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: TransportBody

    /// The first value of a header, case-insensitively; `name` is lower case.
    func header(_ name: String) -> String? {
        // ASCII case folding in place: `lowercased()` allocated a string per header per lookup.
        headers.first { asciiCaseInsensitiveEqual($0.name.utf8, name.utf8) }?.value
    }
}

/// Where a response body goes.
///
/// The transport calls ``consume(_:)`` with each part in arrival order, one call at a time, on its own I/O thread,
/// and reads the next part from the connection only after the call returned. A sink that writes the part before
/// returning therefore leaves nothing received-but-unwritten in this process beyond the part in hand: that is what
/// bounds the bytes a `kill -9` costs.
protocol BodySink: AnyObject, Sendable {
    /// Takes one part of the body.
    ///
    /// - Parameter part: The next bytes of the body.
    /// - Returns: `false` when the sink wants no more bytes: the rest of the body is abandoned and the request
    ///   cancelled.
    /// - Throws: Ends the body with this error (the request is cancelled).
    func consume(_ part: ByteBuffer) throws -> Bool
}

/// A response body, handed to a ``BodySink`` once the engine has decided to keep it.
struct TransportBody: Sendable {
    /// Feeds every part to the sink (first those that arrived before the call) and returns when the body ended.
    let drain: @Sendable (any BodySink) async throws -> Void
    /// Gives the body up: a request still running is cancelled. Harmless after the body ended.
    let abandon: @Sendable () -> Void
    /// Whether the whole body has already arrived and waits in memory (a small body, at most a few MiB).
    let isComplete: @Sendable () -> Bool

    /// Streams the body into `sink`.
    ///
    /// Returns once the body ended or the sink declined more bytes, and only after the sink's last call returned,
    /// so the caller may read the sink's state afterwards. Throws the sink's error, the transport's, or
    /// `CancellationError` when the calling task is cancelled (the request is cancelled with it).
    func drain(into sink: any BodySink) async throws { try await drain(sink) }
}

/// The engine's view of HTTP: one request, one streamed response, no redirects, no decompression.
///
/// The engine owns ranges, validators, redirects, retries and persistence; a transport only moves bytes, so another
/// one (URLSession) can be added without touching the resume rules.
protocol Transport: Sendable {
    /// Sends `request` and returns once the response head has arrived.
    func execute(_ request: TransportRequest) async throws -> TransportResponse
    /// Releases connections; the transport is unusable afterwards.
    func shutdown() async
}

/// The AsyncHTTPClient transport: redirects disallowed, decompression off.
final class AsyncHTTPClientTransport: Transport {
    private let client: HTTPClient
    private let lock = NSLock()
    private nonisolated(unsafe) var isShutDown = false

    init(connectTimeout: Duration, connectionsPerHost: Int) {
        let nanoseconds = Int64(connectTimeout.seconds * 1e9)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(nanoseconds), read: nil),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        // Every running transfer may talk to the same host: one kept-alive connection each, reused by the next
        // transfer, instead of queueing behind AsyncHTTPClient's default of 8.
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(8, connectionsPerHost))
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        // The delegate API, not the streaming `HTTPClientResponse.body`: when a connection drops mid-body the
        // streaming API fails at once and discards parts it had buffered, while a delegate is handed every part
        // that arrived before it hears of the error. Those bytes are already paid for; a resume must keep them.
        let outgoing: HTTPClient.Request
        do {
            var headers = HTTPHeaders()
            for header in request.headers { headers.add(name: header.name, value: header.value) }
            outgoing = try HTTPClient.Request(url: request.url, method: .GET, headers: headers)
        } catch {
            throw Self.translate(error, url: request.url)
        }
        let stream = BodyStream()
        let task = client.execute(request: outgoing, delegate: stream)
        stream.attach(task)
        let url = request.url
        let head: HTTPResponseHead
        do {
            head = try await stream.head()
        } catch {
            throw Self.translate(error, url: url)
        }
        return TransportResponse(
            status: Int(head.status.code),
            headers: head.headers.map { ($0.name, $0.value) },
            body: TransportBody(
                drain: { sink in
                    do {
                        try await stream.drain(into: sink)
                    } catch {
                        throw Self.translate(error, url: url)
                    }
                },
                abandon: { stream.abandon() },
                isComplete: { stream.isComplete }
            )
        )
    }

    func shutdown() async {
        let first = lock.withLock {
            defer { isShutDown = true }
            return !isShutDown
        }
        if first { try? await client.shutdown() }
    }

    deinit {
        // An engine dropped without `shutdown()` must not trap in HTTPClient's deinit check.
        if !isShutDown { client.shutdown { _ in } }
    }

    static func translate(_ error: any Error, url: String) -> any Error {
        if error is CancellationError || error is DownloadError { return error }
        if let error = error as? HTTPClientError {
            if error == .connectTimeout { return DownloadError.connectTimeout(url) }
            if error == .cancelled { return CancellationError() }
        }
        return DownloadError.network(String(describing: error))
    }
}

/// Bridges AsyncHTTPClient's delegate callbacks to the transfer: the head to an awaiting task, the body to a
/// ``BodySink`` called on the connection's event loop.
///
/// Order of events: ``head()`` returns once the head arrived. Body parts that arrive before the transfer has
/// decided what to do with the body wait in `early` (normally nothing, or a small body in full); past `highWater`
/// bytes the delegate's future stays pending, which stops reading from the connection. ``drain(into:)`` then hands
/// the waiting parts to the sink on the event loop, in order, and every later part goes straight from the
/// delegate callback to the sink. No queue, no hop to another thread: the part is written before AsyncHTTPClient
/// reads the next one, which is also the backpressure.
///
/// The drain is resolved only on the event loop (by the end of the body, an error, the sink's error or the sink
/// declining more), after the sink's last call: once it returns, the sink is no longer in use. Cancelling the
/// draining task cancels the request; AsyncHTTPClient then reports the error on the event loop, which resolves
/// the drain.
///
/// Parts are taken without delay on purpose: AsyncHTTPClient discards parts it holds back when the connection fails
/// while a delegate future is pending, and those are bytes a resume would fetch again.
final class BodyStream: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private let lock = NSLock()
    private let highWater = 4 << 20
    private var task: HTTPClient.Task<Void>?
    private var headResult: Result<HTTPResponseHead, any Error>?
    private var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
    private var early: [ByteBuffer] = []
    private var earlyBytes = 0
    private var backpressure: EventLoopPromise<Void>?
    private var sink: (any BodySink)?
    /// The transport's last word on the request: finished, or failed.
    private var ending: Result<Void, any Error>?
    private var drainWaiter: CheckedContinuation<Void, any Error>?
    /// The drain's result, once known; from then on no part reaches the sink.
    private var resolution: Result<Void, any Error>?

    /// Remembers the request, so that cancelling the consumer or abandoning the body can cancel it.
    func attach(_ task: HTTPClient.Task<Void>) {
        lock.withLock { self.task = task }
    }

    deinit {
        // A promise must not be dropped unfulfilled.
        backpressure?.succeed()
    }

    // MARK: Consumer side

    func head() async throws -> HTTPResponseHead {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    if let headResult {
                        continuation.resume(with: headResult)
                    } else {
                        headWaiter = continuation
                    }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    func drain(into sink: any BodySink) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let eventLoop = lock.withLock {
                    drainWaiter = continuation
                    return task?.eventLoop
                }
                // The early parts go to the sink on the event loop, so no later part can overtake them.
                if let eventLoop {
                    eventLoop.execute { self.start(sink) }
                } else {
                    start(sink)
                }
            }
        } onCancel: {
            cancel()
        }
    }

    var isComplete: Bool {
        lock.withLock {
            guard case .success = ending else { return false }
            return true
        }
    }

    func abandon() {
        let unfinished = lock.withLock { ending == nil }
        if unfinished { cancel() }
    }

    private func cancel() {
        lock.withLock { task }?.cancel()
    }

    // MARK: Event loop side

    /// Hands the early parts to the sink, then lets the delegate deliver straight to it.
    private func start(_ sink: any BodySink) {
        let (parts, release, ended) = lock.withLock {
            self.sink = sink
            let parts = early
            early = []
            earlyBytes = 0
            defer { backpressure = nil }
            return (parts, backpressure, ending)
        }
        for part in parts {
            guard deliver(part, to: sink) else {
                release?.succeed()
                return
            }
        }
        if let ended {
            resolve(ended)
        } else {
            release?.succeed()
        }
    }

    /// Gives one part to the sink; resolves the drain and cancels the request when the sink is done or failed.
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
        let waiter: CheckedContinuation<Void, any Error>? = lock.withLock {
            guard resolution == nil else { return nil }
            resolution = result
            defer { drainWaiter = nil }
            return drainWaiter
        }
        waiter?.resume(with: result)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        lock.withLock {
            headResult = .success(head)
            headWaiter?.resume(returning: head)
            headWaiter = nil
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        enum Route {
            case sink(any BodySink)
            case held
            case wait(EventLoopFuture<Void>)
            case ignored
        }
        let route: Route = lock.withLock {
            if resolution != nil { return .ignored }
            if let sink { return .sink(sink) }
            early.append(buffer)
            earlyBytes += buffer.readableBytes
            guard earlyBytes >= highWater else { return .held }
            let promise = task.eventLoop.makePromise(of: Void.self)
            backpressure = promise
            return .wait(promise.futureResult)
        }
        switch route {
        case .sink(let sink): _ = deliver(buffer, to: sink)
        case .wait(let future): return future
        case .held, .ignored: break
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        finish(.failure(error))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        finish(.success(()))
    }

    private func finish(_ result: Result<Void, any Error>) {
        let (release, attached): (EventLoopPromise<Void>?, Bool) = lock.withLock {
            guard ending == nil else { return (nil, false) }
            ending = result
            if let waiter = headWaiter {
                headWaiter = nil
                switch result {
                case .success: waiter.resume(throwing: HTTPClientError.remoteConnectionClosed)
                case .failure(let error): waiter.resume(throwing: error)
                }
            }
            if headResult == nil, case .failure(let error) = result { headResult = .failure(error) }
            defer { backpressure = nil }
            return (backpressure, sink != nil)
        }
        release?.succeed()
        // Without a sink yet, `start` delivers the early parts first and then resolves with this ending.
        if attached { resolve(result) }
    }
}
