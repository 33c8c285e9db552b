import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import DownloadEngine

/// The hand-over between AsyncHTTPClient's event loop and the task waiting for a response.
@Suite("Response body stream")
struct ResponseBodyStreamTests {
    /// A head arriving on the event loop while the waiting task is cancelled (a task group cancelling a download's
    /// segments) must not leave the two threads waiting on each other: resuming a continuation takes the task's
    /// status lock, which cancellation holds while it runs the handler that takes the stream's lock. The race is
    /// run many times, bounded in count and time; a deadlock shows as rounds that never finish.
    @Test("a head arriving while its waiter is cancelled never deadlocks the event loop and the canceller")
    func headRacingCancellation() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let head = HTTPResponseHead(version: .http1_1, status: .ok)
        let rounds = 2_000
        let budget = ContinuousClock.now + .seconds(20)
        let finished = ManagedAtomicCounter()
        let over = ManagedAtomicCounter()
        let racing = Task {
            for _ in 0..<rounds {
                guard ContinuousClock.now < budget else { break }
                let stream = ResponseBodyStream()
                stream.attach(eventLoop: loop, cancel: {})
                let waiter = Task { try await stream.head() }
                // Let the waiter suspend in `head()`, then release the head and the cancellation together.
                try? await Task.sleep(for: .microseconds(200))
                let go = ManagedAtomicCounter()
                loop.execute {
                    while go.value == 0 {}
                    stream.receiveHead(head)
                }
                go.increment()
                waiter.cancel()
                _ = try? await waiter.value
                finished.increment()
            }
            over.increment()
        }
        // The rounds run on other threads; a round takes well under a millisecond, so one that has not finished
        // after 5 s never will: the test fails instead of hanging the suite.
        var last = -1
        var since = ContinuousClock.now
        while over.value == 0 {
            let now = finished.value
            if now != last {
                last = now
                since = .now
            } else if ContinuousClock.now - since > .seconds(5) {
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let ended = over.value == 1
        #expect(
            ended, "\(finished.value) rounds finished, then none for 5 s: the event loop and the canceller deadlocked")
        #expect(finished.value > 0)
        if ended {
            _ = await racing.value
            try await group.shutdownGracefully()
        }
    }

    /// A body that ended before the drain (a small file, whole in the first reads) goes to the sink on the draining
    /// task's thread, in order, without a round trip through the event loop; one still arriving is delivered on the
    /// event loop, as every part after the drain started.
    @Test("a body that has ended is drained on the caller's thread, in order; one still arriving on the event loop")
    func endedBodyIsDrainedInPlace() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let parts = ["first ", "second ", "third"]

        let ended = ResponseBodyStream()
        ended.attach(eventLoop: loop, cancel: {})
        try await loop.submit {
            ended.receiveHead(HTTPResponseHead(version: .http1_1, status: .ok))
            for part in parts { _ = ended.receive(ByteBuffer(string: part), on: loop) }
            ended.finish(.success(()))
        }.get()
        #expect(ended.isComplete)
        let inPlace = RecordingSink(loop: loop)
        try await ended.drain(into: inPlace)
        #expect(inPlace.text == parts.joined())
        #expect(inPlace.onEventLoop == [false, false, false])

        let arriving = ResponseBodyStream()
        arriving.attach(eventLoop: loop, cancel: {})
        try await loop.submit {
            arriving.receiveHead(HTTPResponseHead(version: .http1_1, status: .ok))
            _ = arriving.receive(ByteBuffer(string: parts[0]), on: loop)
        }.get()
        #expect(!arriving.isComplete)
        let onLoop = RecordingSink(loop: loop)
        async let drained: Void = arriving.drain(into: onLoop)
        // The rest arrives once the drain has taken the first part (it is then delivered straight from the loop).
        while onLoop.text.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
        try await loop.submit {
            for part in parts.dropFirst() { _ = arriving.receive(ByteBuffer(string: part), on: loop) }
            arriving.finish(.success(()))
        }.get()
        try await drained
        #expect(onLoop.text == parts.joined())
        #expect(onLoop.onEventLoop == [true, true, true])
        try await group.shutdownGracefully()
    }

    /// A sink that fails on an ended body: the drain throws its error, and no part after it reaches the sink.
    @Test("a sink's error on an ended body ends the drain with that error")
    func endedBodySinkError() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let stream = ResponseBodyStream()
        stream.attach(eventLoop: loop, cancel: {})
        try await loop.submit {
            stream.receiveHead(HTTPResponseHead(version: .http1_1, status: .ok))
            for part in ["a", "b", "c"] { _ = stream.receive(ByteBuffer(string: part), on: loop) }
            stream.finish(.success(()))
        }.get()
        let sink = RecordingSink(loop: loop, failAfter: 2)
        await #expect(throws: RecordingSink.Full.self) { try await stream.drain(into: sink) }
        #expect(sink.text == "ab")
        try await group.shutdownGracefully()
    }
}

/// Records what it is given and on which thread: the event loop's or another.
private final class RecordingSink: BodySink, @unchecked Sendable {
    struct Full: Error {}
    private let lock = NSLock()
    private let loop: any EventLoop
    private let failAfter: Int?
    private var parts: [String] = []
    private var threads: [Bool] = []

    init(loop: any EventLoop, failAfter: Int? = nil) {
        self.loop = loop
        self.failAfter = failAfter
    }

    var text: String { lock.withLock { parts.joined() } }
    var onEventLoop: [Bool] { lock.withLock { threads } }

    func consume(_ part: ByteBuffer) throws -> Bool {
        let count = lock.withLock {
            parts.append(String(buffer: part))
            threads.append(loop.inEventLoop)
            return parts.count
        }
        if let failAfter, count >= failAfter { throw Full() }
        return true
    }
}

/// A counter the racing rounds bump and the test reads from another task.
private final class ManagedAtomicCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
