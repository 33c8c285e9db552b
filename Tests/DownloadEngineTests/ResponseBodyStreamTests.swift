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
}

/// A counter the racing rounds bump and the test reads from another task.
private final class ManagedAtomicCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
