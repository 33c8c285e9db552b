import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TestSupport
import Testing

@testable import DownloadEngine

/// The hand-over between AsyncHTTPClient's event loop and the task waiting for a response.
@Suite("Response body stream")
struct ResponseBodyStreamTests {
    /// A head arriving on the event loop while the waiting task is cancelled (a task group cancelling a download's
    /// segments) must not leave the two threads waiting on each other: resuming a continuation takes the task's
    /// status lock, which cancellation holds while it runs the handler that takes the stream's lock. The race is
    /// run many times, bounded in count and time (both through `RANGE_TEST_TIME_SCALE`).
    ///
    /// A round that stops making progress is diagnosed before the test gives up (``RaceWatch/diagnose(loop:)``): a
    /// deadlock (the event loop inside `receiveHead` and the canceller inside `cancel()`, the loop running nothing
    /// else) and a lost wake-up fail at once; a busy machine (the loop or the cooperative pool slow to run a probe)
    /// only extends the wait, up to a hard bound, and is named as starvation if that bound is reached.
    @Test("a head arriving while its waiter is cancelled never deadlocks the event loop and the canceller")
    func headRacingCancellation() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let head = HTTPResponseHead(version: .http1_1, status: .ok)
        let rounds = 2_000
        // A round takes well under a millisecond; one that has not finished after `window` is examined.
        let window = scaled(.seconds(5))
        let budget = ContinuousClock.now + scaled(.seconds(20))
        let watch = RaceWatch()
        let racing = Task {
            for _ in 0..<rounds {
                guard ContinuousClock.now < budget else { break }
                let stream = ResponseBodyStream()
                stream.attach(eventLoop: loop, cancel: {})
                let waiter = Task { try await stream.head() }
                // Let the waiter suspend in `head()`, then release the head and the cancellation together.
                watch.canceller(.sleeping)
                try? await Task.sleep(for: .microseconds(200))
                let go = RaceWatch.Flag()
                watch.canceller(.scheduling)
                loop.execute {
                    // The spin lines the two up; it is bounded, so a canceller that is not scheduled for a while (a
                    // busy machine) delays the round instead of holding the event loop for good.
                    watch.loop(.spinning)
                    let until = ContinuousClock.now + window
                    var spins = 0
                    // The clock is read every 1,024 turns only, so the spin leaves as soon after the release as it
                    // can: the two sides must meet for the race to be run at all.
                    while !go.isSet {
                        spins &+= 1
                        if spins & 1023 == 0, ContinuousClock.now >= until { break }
                    }
                    watch.loop(.resumingHead)
                    stream.receiveHead(head)
                    watch.loop(.idle)
                }
                go.set()
                watch.canceller(.cancelling)
                waiter.cancel()
                watch.canceller(.awaitingWaiter)
                _ = try? await waiter.value
                watch.finishRound()
            }
            watch.canceller(.over)
        }
        // Hard bound for a run that only ever starved: the budget, one round's window and the probes.
        let giveUp = budget + window * 3
        var verdict: RaceWatch.Verdict?
        var last = -1
        var since = ContinuousClock.now
        while !watch.isOver {
            let now = watch.rounds
            if now != last {
                last = now
                since = .now
            } else if ContinuousClock.now - since > window {
                let seen = await watch.diagnose(loop: loop, probeWindow: scaled(.seconds(1)))
                if seen.isFailure || ContinuousClock.now > giveUp {
                    verdict = seen
                    break
                }
                // Starvation: the machine is slow, not stuck; wait on from here.
                since = .now
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let ended = watch.isOver
        #expect(ended, "\(watch.rounds) rounds finished, then none for \(window): \(verdict?.text ?? "no diagnosis")")
        #expect(watch.rounds > 0)
        if ended {
            _ = await racing.value
            try await group.shutdownGracefully()
        }
        // A deadlocked event loop cannot be shut down; its thread is left behind with the test failed.
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
        let deadline = ContinuousClock.now + scaled(.seconds(10))
        while onLoop.text.isEmpty {
            guard ContinuousClock.now < deadline else {
                Issue.record("the drain delivered nothing within \(scaled(.seconds(10)))")
                // Ends the drain, so the test fails instead of waiting for it for good.
                try await loop.submit { arriving.finish(.failure(CancellationError())) }.get()
                break
            }
            try await Task.sleep(for: .milliseconds(1))
        }
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

/// What each side of ``ResponseBodyStreamTests/headRacingCancellation()`` is doing, recorded as it goes, so that a
/// round that stops can be told apart: a deadlock from a busy machine.
private final class RaceWatch: @unchecked Sendable {
    /// Where the racing task (the canceller) is in a round.
    enum CancellerStep: String {
        case sleeping = "sleeping before the round"
        case scheduling = "scheduling the head on the event loop"
        case cancelling = "inside waiter.cancel() (its cancellation handler takes the stream's lock)"
        case awaitingWaiter = "awaiting the cancelled waiter"
        case over = "done"
    }

    /// Where the event loop is in a round.
    enum LoopStep: String {
        case idle = "idle"
        case spinning = "spinning (bounded) until the canceller releases the head"
        case resumingHead = "inside receiveHead (it takes the stream's lock and resumes the waiter)"
    }

    /// What a stop was.
    struct Verdict {
        /// A deadlock or a lost wake-up, which fail the test; otherwise starvation, which only extends the wait.
        var isFailure: Bool
        var text: String
    }

    /// A flag one thread sets and another polls.
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    private let lock = NSLock()
    private var finished = 0
    private var cancellerStep = CancellerStep.sleeping
    private var loopStep = LoopStep.idle
    private var since = ContinuousClock.now

    func canceller(_ step: CancellerStep) { lock.withLock { (cancellerStep, since) = (step, .now) } }
    func loop(_ step: LoopStep) { lock.withLock { (loopStep, since) = (step, .now) } }
    func finishRound() { lock.withLock { finished += 1 } }
    var rounds: Int { lock.withLock { finished } }
    var isOver: Bool { lock.withLock { cancellerStep == .over } }

    /// Looks at a round that has not finished: where both sides are, whether the event loop still runs a task
    /// scheduled on it, and whether the cooperative pool still starts a new task, each within `probeWindow`.
    func diagnose(loop: any EventLoop, probeWindow: Duration) async -> Verdict {
        let loopRan = Flag()
        loop.execute { loopRan.set() }
        let poolRan = Flag()
        Task.detached { poolRan.set() }
        let deadline = ContinuousClock.now + probeWindow
        while !(loopRan.isSet && poolRan.isSet) && ContinuousClock.now < deadline {
            // Waking this task needs the pool too: on a starved pool it wakes late, and the flags say what ran.
            try? await Task.sleep(for: .milliseconds(5))
        }
        let (canceller, loopAt, still) = lock.withLock { (cancellerStep, loopStep, ContinuousClock.now - since) }
        let sides = "the canceller is \(canceller.rawValue), the event loop is \(loopAt.rawValue), for \(still)"
        let probes =
            "the event loop \(loopRan.isSet ? "ran" : "did not run") a probe task within \(probeWindow), the "
            + "cooperative pool \(poolRan.isSet ? "started" : "did not start") one"
        if !loopRan.isSet && loopAt == .resumingHead && canceller == .cancelling && still >= probeWindow {
            return Verdict(isFailure: true, text: "deadlock: \(sides); \(probes)")
        }
        if loopRan.isSet && poolRan.isSet && canceller == .awaitingWaiter {
            return Verdict(isFailure: true, text: "lost wake-up (the waiter was never resumed): \(sides); \(probes)")
        }
        return Verdict(
            isFailure: false, text: "starvation (the machine is busy, nothing is stuck): \(sides); \(probes)")
    }
}
