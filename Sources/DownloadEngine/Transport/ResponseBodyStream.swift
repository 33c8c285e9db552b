import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One response of ``HTTPTransport`` bridged to the engine: the head to an awaiting task and the body to a
/// ``BodySink`` called on the connection's event loop.
///
/// Fed by either client of the transport: AsyncHTTPClient's delegate callbacks for direct requests (the extension
/// below), and ``ProxyExchangeHandler`` for requests through a proxy, which calls ``receiveHead(_:)``,
/// ``receive(_:on:)`` and ``finish(_:)`` the same way from its channel. Both attach the request's event loop and a
/// way to cancel it (``attach(eventLoop:cancel:)``).
///
/// Order of events: ``head()`` returns once the head arrived. Body parts that arrive before the engine has decided
/// what to do with the body wait in `early` (normally nothing, or a small body in full); past ``highWater`` bytes
/// ``receive(_:on:)`` returns a pending future, which stops the client reading from the connection. ``drain(into:)``
/// hands the waiting parts to the sink on the event loop, in order, and every later part goes straight from the
/// client's callback to the sink: no queue and no hop to another thread, so a part is written before the next one is
/// read, which is both the backpressure and what bounds the bytes a `kill -9` costs.
///
/// The delegate API, not the streaming `HTTPClientResponse.body`: when a connection drops mid-body the streaming API
/// fails at once and discards parts it had buffered, while a delegate is handed every part that arrived before it
/// hears of the error. Those bytes are paid for; a resume keeps them. For the same reason parts are taken without
/// delay once the drain started: AsyncHTTPClient drops parts it holds back behind a pending future when the
/// connection fails.
///
/// The drain is resolved on the event loop (by the end of the body, an error, the sink's error or the sink
/// declining more), after the sink's last call: once it returns, the sink is no longer in use. The exception is a
/// body that had ended when the drain began: the draining task feeds it to the sink itself (``drain(into:)``).
/// Cancelling the draining task cancels the request; the client then reports the error on the event loop, which
/// resolves the drain.
final class ResponseBodyStream: @unchecked Sendable {
    /// Bytes held before the drain starts, at most (then reading stops until the drain takes them).
    static let highWater = 4 << 20

    /// The bandwidth limits the body is read under: every part received is charged, early or not, and the next
    /// read waits out the debt (``receive(_:on:)``).
    private let pacing: ReadPacing?

    /// A stream whose body is read under `pacing`'s limits (none when `nil`).
    init(pacing: ReadPacing? = nil) { self.pacing = pacing }

    private let lock = NSLock()
    /// The request's event loop, where every part reaches the sink.
    private var eventLoop: (any EventLoop)?
    /// Cancels the request (closes its connection); set by `attach`.
    private var cancelRequest: (@Sendable () -> Void)?
    private var headResult: Result<HTTPResponseHead, any Error>?
    private var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
    private var early: [ByteBuffer] = []
    private var earlyBytes = 0
    private var backpressure: EventLoopPromise<Void>?
    private var sink: (any BodySink)?
    /// AsyncHTTPClient's last word on the request: finished, or failed.
    private var ending: Result<Void, any Error>?
    private var drainWaiter: CheckedContinuation<Void, any Error>?
    /// The drain's result, once known; from then on no part reaches the sink.
    private var resolution: Result<Void, any Error>?
    private var cancelRequested = false

    /// Remembers the request's event loop and how to cancel the request, so that cancelling the consumer or
    /// abandoning the body can cancel it.
    func attach(eventLoop: any EventLoop, cancel: @escaping @Sendable () -> Void) {
        let cancelNow = lock.withLock {
            self.eventLoop = eventLoop
            self.cancelRequest = cancel
            return cancelRequested
        }
        if cancelNow { cancel() }
    }

    deinit {
        // A promise must not be dropped unfulfilled.
        backpressure?.succeed()
    }

    // MARK: Consumer side

    /// Waits for the response head; cancelling the calling task cancels the request.
    ///
    /// No continuation of this type is resumed while `lock` is held. Resuming takes the task's status lock, which
    /// a thread cancelling the task holds while it runs the cancellation handler, and the handler (`cancel()`)
    /// takes `lock`: an event loop resuming the head inside `lock` while a task group cancelled the download's
    /// segments left both threads waiting on each other for good (seen once in a fault-matrix run,
    /// `ignore-if-range-version-change × engine-x4`).
    func head() async throws -> HTTPResponseHead {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<HTTPResponseHead, any Error>? = lock.withLock {
                    if let headResult { return headResult }
                    headWaiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Feeds the early parts, then every later one, to `sink`; returns when the body ended or the sink declined
    /// more, after the sink's last call.
    func drain(into sink: any BodySink) async throws {
        // The sink's last call happened on the event loop before `resolve` released `lock`, and the caller reads the
        // sink's state as soon as this returns. The continuation orders the two already; taking the lock once more
        // after it states that order in a form ThreadSanitizer sees too (one TSAN run of two reported the sink's
        // `length` as a race without it; docs/reliability.md).
        defer { _ = lock.withLock { resolution } }
        if let result = drainComplete(into: sink) { return try result.get() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let eventLoop = lock.withLock {
                    drainWaiter = continuation
                    return self.eventLoop
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

    /// Feeds a body that has ended, all of it held in `early`, to `sink` on the calling thread; `nil` when the body
    /// has not ended (the event loop must deliver the rest).
    ///
    /// Once AsyncHTTPClient reported the end, no callback of this request delivers a part any more, so nothing can
    /// overtake the held parts and the sink is used by this thread alone. A small file's body has often ended by
    /// the time its transfer drains it: the hop to the event loop and back would cost two thread wake-ups per file
    /// for no work there.
    private func drainComplete(into sink: any BodySink) -> Result<Void, any Error>? {
        let ended = lock.withLock {
            guard resolution == nil, self.sink == nil, case .success = ending else { return false }
            return true
        }
        guard ended else { return nil }
        start(sink)
        return lock.withLock { resolution }
    }

    /// Whether the whole body has arrived (and waits in `early` unless the drain took it).
    var isComplete: Bool {
        lock.withLock {
            guard case .success = ending else { return false }
            return true
        }
    }

    /// Gives the body up: a request still running is cancelled, and its connection closed by AsyncHTTPClient.
    func abandon() {
        let unfinished = lock.withLock { ending == nil }
        if unfinished { cancel() }
    }

    /// Whether the engine cancelled this request (its task was cancelled or the body abandoned): only then is
    /// AsyncHTTPClient's `cancelled` the engine's own cancellation.
    var wasCancelled: Bool { lock.withLock { cancelRequested } }

    private func cancel() {
        let cancelRequest = lock.withLock {
            cancelRequested = true
            return self.cancelRequest
        }
        cancelRequest?()
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

    /// Takes the response head; the awaiting ``head()`` returns it.
    func receiveHead(_ head: HTTPResponseHead) {
        let waiter: CheckedContinuation<HTTPResponseHead, any Error>? = lock.withLock {
            headResult = .success(head)
            defer { headWaiter = nil }
            return headWaiter
        }
        // Outside the lock (see `head()`).
        waiter?.resume(returning: head)
    }

    /// Takes one part of the body, on the request's event loop: straight to the sink once the drain started, else
    /// held.
    ///
    /// - Returns: `nil` to go on reading; a future when ``highWater`` bytes are held, which succeeds once the
    ///   drain took them: the caller reads nothing from the connection until then.
    func receive(_ buffer: ByteBuffer, on eventLoop: any EventLoop) -> EventLoopFuture<Void>? {
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
            guard earlyBytes >= Self.highWater else { return .held }
            let promise = eventLoop.makePromise(of: Void.self)
            backpressure = promise
            return .wait(promise.futureResult)
        }
        var held: EventLoopFuture<Void>?
        switch route {
        case .sink(let sink): _ = deliver(buffer, to: sink)
        case .wait(let future): held = future
        case .held, .ignored: break
        }
        // A bandwidth limit delays the next read by the debt this part made. Parts AsyncHTTPClient read ahead and
        // holds behind the pending future are lost if the connection fails meanwhile: never written, so never
        // counted, and fetched again by the resume.
        if let pacing {
            let delay = pacing.take(buffer.readableBytes)
            if delay > .zero {
                let paced = ReadPacing.hold(for: delay, on: eventLoop)
                held = held.map { $0.and(paced).map { _ in } } ?? paced
            }
        }
        return held
    }

    /// Takes the request's last word: the body ended (`.success`) or the request failed. Only the first call counts.
    ///
    /// Before the head, a success means the connection ended without a response:
    /// ``ResponseBodyStream/ConnectionClosed``.
    func finish(_ result: Result<Void, any Error>) {
        let (release, attached, waiter):
            (EventLoopPromise<Void>?, Bool, CheckedContinuation<HTTPResponseHead, any Error>?) = lock.withLock {
                guard ending == nil else { return (nil, false, nil) }
                ending = result
                if headResult == nil, case .failure(let error) = result { headResult = .failure(error) }
                defer {
                    backpressure = nil
                    headWaiter = nil
                }
                return (backpressure, sink != nil, headWaiter)
            }
        // Outside the lock (see `head()`).
        if let waiter {
            switch result {
            case .success: waiter.resume(throwing: ConnectionClosed())
            case .failure(let error): waiter.resume(throwing: error)
            }
        }
        release?.succeed()
        // Without a sink yet, `start` delivers the early parts first and then resolves with this ending.
        if attached { resolve(result) }
    }
}

extension ResponseBodyStream {
    /// The connection ended before a response head arrived.
    struct ConnectionClosed: Error {}
}

/// AsyncHTTPClient's delegate callbacks, for direct requests.
extension ResponseBodyStream: HTTPClientResponseDelegate {
    typealias Response = Void

    /// Remembers the request, so that cancelling the consumer or abandoning the body can cancel it.
    func attach(_ task: HTTPClient.Task<Void>) {
        attach(eventLoop: task.eventLoop, cancel: { task.cancel() })
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        receiveHead(head)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        receive(buffer, on: task.eventLoop) ?? task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        finish(.failure(error))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        finish(.success(()))
    }
}
