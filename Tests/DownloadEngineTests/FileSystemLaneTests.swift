import Foundation
import Testing

@testable import DownloadEngine

/// The lane that creates and renames files in the state directory one call at a time.
@Suite("File-system lane")
struct FileSystemLaneTests {
    /// Many tasks at once: every call runs, returns its own result, and no two ever overlap, whether a call ran in
    /// place (the lane was free) or queued behind another on the lane's thread.
    @Test("calls from many tasks never overlap, and each returns its own result")
    func callsNeverOverlap() async throws {
        let lane = FileSystemLane()
        let probe = OverlapProbe()
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<400 {
                group.addTask {
                    try await lane.run {
                        probe.enter()
                        defer { probe.leave() }
                        // Long enough that other tasks find the lane busy.
                        usleep(index % 8 == 0 ? 500 : 20)
                        return index
                    }
                }
            }
            var all: [Int] = []
            for try await value in group { all.append(value) }
            return all
        }
        #expect(results.sorted() == Array(0..<400))
        #expect(probe.maximum == 1, "\(probe.maximum) lane calls ran at once")
    }

    /// A call made while another holds the lane does not run beside it: it queues, and runs once the first is done.
    @Test("a call made while another runs waits for it and then runs")
    func busyLaneQueues() async throws {
        let lane = FileSystemLane()
        let release = DispatchSemaphore(value: 0)
        let order = OverlapProbe()
        let first = try await withCheckedThrowingContinuation {
            (holding: CheckedContinuation<Task<Int, any Error>, any Error>) in
            let task = Task {
                try await lane.run {
                    order.record("first started")
                    release.wait()
                    order.record("first ended")
                    return 1
                }
            }
            Task {
                // Hands the task over once its call holds the lane.
                while order.events.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
                holding.resume(returning: task)
            }
        }
        let second = Task {
            try await lane.run {
                order.record("second"); return 2
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(order.events == ["first started"], "the second call ran while the first held the lane")
        release.signal()
        #expect(try await first.value == 1)
        #expect(try await second.value == 2)
        #expect(order.events == ["first started", "first ended", "second"])
    }

    /// A call's error reaches its caller, in place or queued, and does not stop the calls after it.
    @Test("a call's error reaches its caller and the lane goes on")
    func errorsReachTheCaller() async throws {
        struct Refused: Error {}
        let lane = FileSystemLane()
        await #expect(throws: Refused.self) { try await lane.run { () throws -> Int in throw Refused() } }
        let failures = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<50 {
                group.addTask {
                    do {
                        _ = try await lane.run { () throws -> Int in
                            usleep(100)
                            if index % 2 == 0 { throw Refused() }
                            return index
                        }
                        return false
                    } catch {
                        return error is Refused
                    }
                }
            }
            var count = 0
            for await failed in group where failed { count += 1 }
            return count
        }
        #expect(failures == 25)
        #expect(try await lane.run { 7 } == 7)
    }
}

/// Counts the calls inside the lane at once, and records what the calls did, in order.
private final class OverlapProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var inside = 0
    private(set) var maximumSeen = 0

    func enter() {
        lock.withLock {
            inside += 1
            maximumSeen = max(maximumSeen, inside)
        }
    }

    func leave() { lock.withLock { inside -= 1 } }
    var maximum: Int { lock.withLock { maximumSeen } }

    private var log: [String] = []
    func record(_ event: String) { lock.withLock { log.append(event) } }
    var events: [String] { lock.withLock { log } }
}
