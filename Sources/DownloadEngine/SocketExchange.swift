import Foundation
import NIOCore

/// One request of ``SocketTransport`` on its connection: the blocking work on a pool thread, and the handoff of the
/// head and the body to the async side.
///
/// The thread connects (or takes a pooled connection), sends the request, reads the head and then the body. Parts
/// that arrive before ``drain(into:)`` are held in `held`; past ``highWater`` bytes the thread waits, so nothing
/// more is read from the socket. ``drain(into:)`` first delivers the held parts itself, on the calling task, in
/// order; once none is left it hands the sink to the thread, which from then on delivers each part the moment it
/// decoded it, before the next `recv`. The sink therefore sees every part in order, one call at a time, and a part
/// in its hands is the only received byte not yet written. A body that ended before the drain (a small file on a
/// fast link) is delivered entirely on the calling task, without any further thread hop.
///
/// Parts decoded before a connection error are held or delivered before the error is reported, so a resume keeps
/// them. Cancellation (of the awaiting task, or ``abandon()``) sets `cancelled` and shuts the socket down, which
/// wakes the thread from `recv`; only the thread closes the descriptor, under the lock, so a shutdown never reaches
/// a descriptor number reused by another connection.
final class SocketExchange: @unchecked Sendable {
    /// Bytes held before the drain starts, at most (then reading stops until the drain takes them).
    static let highWater = 4 << 20

    private let transport: SocketTransport
    private let target: HTTPTarget
    private let url: String
    private let request: [UInt8]

    private let condition = NSCondition()
    private var cancelled = false
    /// The descriptor while the thread uses it; -1 before and after.
    private var fd: Int32 = -1
    private var head: Result<HTTP1ResponseDecoder.Head, any Error>?
    private var headWaiter: CheckedContinuation<HTTP1ResponseDecoder.Head, any Error>?
    private var held: [ByteBuffer] = []
    private var heldBytes = 0
    /// The sink, once the drain handed it to the thread.
    private var sink: (any BodySink)?
    /// The transport's last word on the body: ended, or failed.
    private var ending: Result<Void, any Error>?
    /// The drain's result, once known; from then on no part reaches the sink.
    private var resolution: Result<Void, any Error>?
    private var drainWaiter: CheckedContinuation<Void, any Error>?
    /// Whether any byte of the response arrived on the current connection; only touched by the thread.
    private var receivedAny = false

    init(transport: SocketTransport, target: HTTPTarget, url: String, request: [UInt8]) {
        self.transport = transport
        self.target = target
        self.url = url
        self.request = request
    }

    // MARK: Async side

    /// Starts the request on a pool thread and returns its response head.
    func start() async throws -> HTTP1ResponseDecoder.Head {
        transport.threads.run { [self] in work() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                condition.lock()
                if let head {
                    condition.unlock()
                    continuation.resume(with: head)
                } else {
                    headWaiter = continuation
                    condition.unlock()
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Feeds the held parts, then every later one, to `sink`; returns when the body ended or the sink declined more,
    /// after the sink's last call.
    func drain(into sink: any BodySink) async throws {
        while true {
            enum Step {
                case deliver([ByteBuffer])
                case done(Result<Void, any Error>)
                case handOff
            }
            let step: Step = condition.withLock {
                if let resolution { return .done(resolution) }
                if !held.isEmpty {
                    defer {
                        held = []
                        heldBytes = 0
                        // The thread may be waiting at the high-water mark.
                        condition.broadcast()
                    }
                    return .deliver(held)
                }
                if let ending {
                    resolution = ending
                    return .done(ending)
                }
                self.sink = sink
                return .handOff
            }
            switch step {
            case .deliver(let parts):
                for part in parts {
                    if let result = deliver(part, to: sink) { return try result.get() }
                }
            case .done(let result):
                return try result.get()
            case .handOff:
                return try await waitForDrain()
            }
        }
    }

    private func waitForDrain() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                condition.lock()
                if let resolution {
                    condition.unlock()
                    continuation.resume(with: resolution)
                } else {
                    drainWaiter = continuation
                    condition.unlock()
                }
            }
        } onCancel: {
            cancel()
        }
    }

    var isComplete: Bool {
        condition.withLock {
            guard case .success = ending else { return false }
            return true
        }
    }

    func abandon() {
        let unfinished = condition.withLock { ending == nil }
        if unfinished { cancel() }
    }

    /// Stops the request: wakes the thread from `recv`, `send` or the high-water wait. Harmless once it ended.
    private func cancel() {
        condition.withLock {
            cancelled = true
            if fd >= 0 { SocketIO.shutdown(fd) }
            condition.broadcast()
        }
    }

    /// Gives one part to the sink. Returns `nil` to go on, or the drain's result when the sink is done with the
    /// body (declined more bytes, or threw): the request is then cancelled.
    private func deliver(_ part: ByteBuffer, to sink: any BodySink) -> Result<Void, any Error>? {
        let result: Result<Void, any Error>
        do {
            if try sink.consume(part) { return nil }
            result = .success(())
        } catch {
            result = .failure(error)
        }
        resolve(result)
        cancel()
        return result
    }

    private func resolve(_ result: Result<Void, any Error>) {
        condition.lock()
        guard resolution == nil else { return condition.unlock() }
        resolution = result
        let waiter = drainWaiter
        drainWaiter = nil
        condition.unlock()
        waiter?.resume(with: result)
    }

    // MARK: Thread side

    private var isCancelled: Bool { condition.withLock { cancelled } }

    /// The request, on its pool thread, from connect to the end of the body.
    private func work() {
        do {
            var reused = true
            while true {
                var fd = reused ? transport.takeIdle(target) : nil
                if fd == nil {
                    reused = false
                    fd = try transport.connect(target, url: url) { isCancelled }
                }
                try attach(fd!)
                do {
                    let reusable = try exchange(on: fd!)
                    detach(fd!, keep: reusable)
                    return end(.success(()))
                } catch let failure as SocketIO.Failure where reused && failure.isConnectionLoss && !receivedAny {
                    // The server closed the kept-alive connection before it read the request: send it again on a new
                    // one. Nothing of the response arrived, so nothing is lost or repeated.
                    detach(fd!, keep: false)
                    reused = false
                } catch StaleConnection.closed where reused {
                    detach(fd!, keep: false)
                    reused = false
                } catch {
                    detach(fd!, keep: false)
                    throw error
                }
            }
        } catch {
            end(.failure(error))
        }
    }

    /// The end of the connection before any byte of the response, on a reused connection.
    private enum StaleConnection: Error { case closed }

    private func attach(_ fd: Int32) throws {
        let wasCancelled = condition.withLock {
            if !cancelled { self.fd = fd }
            return cancelled
        }
        if wasCancelled {
            SocketIO.close(fd)
            throw CancellationError()
        }
    }

    private func detach(_ fd: Int32, keep: Bool) {
        let wasCancelled = condition.withLock {
            self.fd = -1
            return cancelled
        }
        if keep, !wasCancelled { transport.keep(fd, for: target) } else { SocketIO.close(fd) }
    }

    /// Sends the request and reads the response. Returns whether the connection may be reused.
    private func exchange(on fd: Int32) throws -> Bool {
        let peer = target.hostField
        try request.withUnsafeBytes { try SocketIO.send(fd, $0, peer: peer) }
        var buffer = ByteBufferAllocator().buffer(capacity: SocketTransport.readSize)
        var decoder = HTTP1ResponseDecoder()
        receivedAny = false
        var parts: [ByteBuffer] = []
        while true {
            var ended = false
            var malformed: (any Error)?
            do {
                while !ended, let event = try decoder.next(&buffer) {
                    switch event {
                    case .head(let head): publish(head)
                    case .body(let part): parts.append(part)
                    case .end: ended = true
                    }
                }
            } catch {
                malformed = error
            }
            // The parts before a framing error are the body's as much as any: the sink gets them first.
            if !parts.isEmpty {
                guard arrived(parts) else { throw CancellationError() }
                parts.removeAll(keepingCapacity: true)
            }
            if let malformed { throw malformed }
            // Bytes after the end of the body were never asked for: the connection is out of step, not reused.
            if ended { return decoder.isReusable && buffer.readableBytes == 0 }
            if buffer.readableBytes == 0 { buffer.clear() } else { buffer.discardReadBytes() }
            let count: Int
            do {
                count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 4096) {
                    try SocketIO.receive(fd, into: $0, peer: peer)
                }
            } catch {
                if isCancelled { throw CancellationError() }
                throw error
            }
            if count == 0 {
                if isCancelled { throw CancellationError() }
                if !receivedAny { throw StaleConnection.closed }
                // A body delimited by the connection's end ends here; any other is cut short (this throws).
                _ = try decoder.endOfInput()
                return false
            }
            receivedAny = true
        }
    }

    private func publish(_ decoded: HTTP1ResponseDecoder.Head) {
        condition.lock()
        head = .success(decoded)
        let waiter = headWaiter
        headWaiter = nil
        condition.unlock()
        waiter?.resume(returning: decoded)
    }

    /// Hands decoded parts on: to the sink when the drain handed it over, else to `held` (waiting at the high-water
    /// mark). Returns `false` when the request is to stop (cancelled, or the sink is done with the body).
    private func arrived(_ parts: [ByteBuffer]) -> Bool {
        condition.lock()
        if cancelled || resolution != nil {
            condition.unlock()
            return false
        }
        if let sink {
            condition.unlock()
            for part in parts where deliver(part, to: sink) != nil { return false }
            return true
        }
        for part in parts {
            held.append(part)
            heldBytes += part.readableBytes
        }
        while heldBytes >= Self.highWater, sink == nil, !cancelled, resolution == nil { condition.wait() }
        let goOn = !cancelled && resolution == nil
        condition.unlock()
        return goOn
    }

    /// Records how the body ended and tells whoever waits: the head's awaiter (when it never came), or the drain.
    private func end(_ result: Result<Void, any Error>) {
        let result = result.mapError { Self.translate($0) }
        condition.lock()
        guard ending == nil else { return condition.unlock() }
        ending = result
        var headWaiter: CheckedContinuation<HTTP1ResponseDecoder.Head, any Error>?
        if head == nil {
            let failure: any Error
            if case .failure(let error) = result {
                failure = error
            } else {
                failure = DownloadError.network("connection closed before a response head")
            }
            head = .failure(failure)
            headWaiter = self.headWaiter
            self.headWaiter = nil
        }
        let handedOver = sink != nil
        condition.broadcast()
        condition.unlock()
        if let headWaiter, case .failure(let failure)? = head { headWaiter.resume(throwing: failure) }
        if handedOver { resolve(result) }
    }

    private static func translate(_ error: any Error) -> any Error {
        switch error {
        case let failure as SocketIO.Failure: failure.error
        case StaleConnection.closed: DownloadError.network("connection closed before a response")
        default: error
        }
    }
}
