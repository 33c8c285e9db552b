import Foundation
import Testing

@testable import DownloadEngine

/// The lane that creates and renames files in the state directory one call at a time.
@Suite("File-system lane")
struct FileSystemLaneTests {
    /// Many tasks at once: every call runs, returns its own result, and no two ever overlap, whether a call ran in
    /// place (the lane was free) or queued behind another on the lane's thread.
    @Test("calls from many tasks never overlap, each returns its own result, and some queue when the lane is busy")
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
        #expect(probe.threads > 1, "every call ran on one thread: none queued, or none ran in place")
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

/// Counts the calls inside the lane at once, and the threads they ran on.
private final class OverlapProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var inside = 0
    private var seenThreads: Set<ObjectIdentifier> = []
    private(set) var maximumSeen = 0

    func enter() {
        let thread = ObjectIdentifier(Thread.current)
        lock.withLock {
            inside += 1
            maximumSeen = max(maximumSeen, inside)
            seenThreads.insert(thread)
        }
    }

    func leave() { lock.withLock { inside -= 1 } }
    var maximum: Int { lock.withLock { maximumSeen } }
    var threads: Int { lock.withLock { seenThreads.count } }
}
