import AsyncHTTPClient
import Foundation
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

    /// The first value of a header, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name }?.value
    }
}

/// A response body: an async sequence of byte buffers behind a closure, so any transport can provide one.
struct TransportBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    struct AsyncIterator: AsyncIteratorProtocol {
        var nextChunk: () async throws -> ByteBuffer?
        mutating func next() async throws -> ByteBuffer? { try await nextChunk() }
    }

    let make: @Sendable () -> AsyncIterator

    func makeAsyncIterator() -> AsyncIterator { make() }
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

    init(connectTimeout: Duration) {
        let nanoseconds = Int64(connectTimeout.seconds * 1e9)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(nanoseconds), read: nil),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
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
            body: TransportBody {
                TransportBody.AsyncIterator {
                    do {
                        return try await stream.next()
                    } catch {
                        throw Self.translate(error, url: url)
                    }
                }
            }
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

/// Bridges AsyncHTTPClient's delegate callbacks to one async consumer.
///
/// Body parts are handed over in arrival order, and an error only after every part that arrived before it.
///
/// Backpressure is deliberately late: AsyncHTTPClient discards the parts it holds back when the connection fails
/// while a delegate future is pending, and those are bytes a resume would have to fetch again. So parts are taken
/// at once and queued here, and only once `highWater` bytes wait unread (the disk is far behind the network) does
/// the delegate's future stay pending until the consumer catches up. Memory stays bounded, and a drop loses
/// nothing unless it strikes in exactly that state. Cancelling the consuming task, or dropping the body unread,
/// cancels the request.
final class BodyStream: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private let lock = NSLock()
    private let highWater = 16 << 20
    private var queuedBytes = 0
    private var task: HTTPClient.Task<Void>?
    private var headResult: Result<HTTPResponseHead, any Error>?
    private var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
    private var parts: [ByteBuffer] = []
    private var partsStart = 0
    private var ending: Result<Void, any Error>?
    private var partWaiter: CheckedContinuation<ByteBuffer?, any Error>?
    private var backpressure: EventLoopPromise<Void>?

    /// Remembers the request, so that cancelling the consumer or dropping the body can cancel it.
    func attach(_ task: HTTPClient.Task<Void>) {
        lock.withLock { self.task = task }
    }

    deinit {
        // A body nobody reads to the end must not hold the connection open.
        if ending == nil { task?.cancel() }
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

    func next() async throws -> ByteBuffer? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let release: EventLoopPromise<Void>? = lock.withLock {
                    if partsStart < parts.count {
                        let part = parts[partsStart]
                        partsStart += 1
                        queuedBytes -= part.readableBytes
                        if partsStart == parts.count {
                            parts.removeAll(keepingCapacity: true)
                            partsStart = 0
                        }
                        continuation.resume(returning: part)
                    } else if let ending {
                        switch ending {
                        case .success: continuation.resume(returning: nil)
                        case .failure(let error): continuation.resume(throwing: error)
                        }
                    } else {
                        partWaiter = continuation
                    }
                    guard queuedBytes < highWater else { return nil }
                    defer { backpressure = nil }
                    return backpressure
                }
                release?.succeed()
            }
        } onCancel: {
            cancel()
        }
    }

    private func cancel() {
        lock.withLock { task }?.cancel()
    }

    // MARK: Delegate side (on the connection's event loop)

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        lock.withLock {
            headResult = .success(head)
            headWaiter?.resume(returning: head)
            headWaiter = nil
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        lock.withLock {
            if let waiter = partWaiter {
                partWaiter = nil
                waiter.resume(returning: buffer)
                return task.eventLoop.makeSucceededVoidFuture()
            }
            parts.append(buffer)
            queuedBytes += buffer.readableBytes
            guard queuedBytes >= highWater else { return task.eventLoop.makeSucceededVoidFuture() }
            let promise = task.eventLoop.makePromise(of: Void.self)
            backpressure = promise
            return promise.futureResult
        }
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        finish(.failure(error))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        finish(.success(()))
    }

    private func finish(_ result: Result<Void, any Error>) {
        let release: EventLoopPromise<Void>? = lock.withLock {
            guard ending == nil else { return nil }
            ending = result
            if let waiter = headWaiter {
                headWaiter = nil
                switch result {
                case .success: waiter.resume(throwing: HTTPClientError.remoteConnectionClosed)
                case .failure(let error): waiter.resume(throwing: error)
                }
            }
            if headResult == nil, case .failure(let error) = result { headResult = .failure(error) }
            if let waiter = partWaiter {
                partWaiter = nil
                switch result {
                case .success: waiter.resume(returning: nil)
                case .failure(let error): waiter.resume(throwing: error)
                }
            }
            defer { backpressure = nil }
            return backpressure
        }
        release?.succeed()
    }
}
