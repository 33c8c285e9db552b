import Foundation
import Testing

@testable import DownloadEngine

@Suite("Segment plan and log")
struct SegmentPlanTests {
    let mebibyte: Int64 = 1 << 20

    @Test("divide cuts the pending bytes into pieces, several per connection, none below the minimum size")
    func divide() {
        var plan = SegmentPlan(total: 512 * mebibyte, completed: [], minimumSize: mebibyte)
        plan.divide(into: 4)
        // 16 pieces per connection: 64 pieces of 8 MiB, in file order.
        #expect(plan.pending.count == 64)
        #expect(plan.pending.first == 0..<8 * mebibyte && plan.pending.last == 504 * mebibyte..<512 * mebibyte)
        var small = SegmentPlan(total: 3 * mebibyte + 4096, completed: [], minimumSize: mebibyte)
        small.divide(into: 8)
        // 3 MiB makes three pieces of the minimum size; the 4 KiB left over joins the last.
        #expect(small.pending == [0..<mebibyte, mebibyte..<2 * mebibyte, 2 * mebibyte..<3 * mebibyte + 4096])
    }

    /// The segment a claim gave, failing the test otherwise.
    func segment(_ claim: SegmentPlan.Claim) throws -> SegmentPlan.Segment {
        guard case .segment(let segment) = claim else {
            Issue.record("expected a segment, got \(claim)")
            throw CancellationError()
        }
        return segment
    }

    @Test("claims take pending pieces in file order, then split the largest running segment at 64 KiB")
    func claimAndSplit() throws {
        let start = ContinuousClock.now
        var plan = SegmentPlan(total: 10 * mebibyte, completed: [0..<mebibyte], minimumSize: mebibyte)
        plan.divide(into: 1)
        let first = try segment(plan.claim(0, now: start))
        let second = try segment(plan.claim(1, now: start))
        #expect(first.start == mebibyte && first.end == 2 * mebibyte)
        #expect(second.start == 2 * mebibyte && second.end == 3 * mebibyte)
        var whole = SegmentPlan(total: 10 * mebibyte, completed: [0..<mebibyte], minimumSize: mebibyte)
        let only = try segment(whole.claim(0, now: start))
        #expect(only.start == mebibyte && only.end == 10 * mebibyte)
        whole.advance(0, to: only.start + 100_000)
        // Too early to know the segment's speed: wait.
        let early = whole.claim(1, now: start + .milliseconds(100))
        #expect(early == .wait)
        // After a second at 100 KB/s it has a minute and a half left: connection 1 takes its upper half.
        let split = whole.claim(1, now: start + .seconds(1))
        let upper = try segment(split)
        #expect(upper.start % 65_536 == 0 && upper.end == 10 * mebibyte)
        #expect(whole.end(of: 0) == upper.start)
        #expect(whole.doneBytes == mebibyte + 100_000)
        #expect(whole.contiguousEnd == mebibyte + 100_000)
    }

    @Test("a segment about to finish at its speed is not split: its upper half may already be on the wire")
    func fastSegmentNotSplit() throws {
        let start = ContinuousClock.now
        var plan = SegmentPlan(total: 64 * mebibyte, completed: [], minimumSize: mebibyte)
        let whole = plan.claim(0, now: start)
        let only = try segment(whole)
        // 32 MiB in half a second: the other 32 MiB take another half second, under the split horizon.
        plan.advance(0, to: only.start + 32 * mebibyte)
        let fast = plan.claim(1, now: start + .milliseconds(500))
        #expect(fast == .wait)
        // The same progress over 16 seconds: 16 more to go, worth a second connection.
        let later = plan.claim(1, now: start + .seconds(16))
        #expect(try segment(later).start == 48 * mebibyte)
    }

    @Test("a bounded first response claims exactly its range; the rest is divided")
    func claimExactly() throws {
        let now = ContinuousClock.now
        var plan = SegmentPlan(total: 9 * mebibyte, completed: [], minimumSize: mebibyte)
        let claimed = plan.claim(0, exactly: 0..<mebibyte, now: now)
        let probe = try #require(claimed)
        #expect(probe.end == mebibyte)
        plan.divide(into: 4)
        #expect(plan.pending.count == 8 && plan.pending.first == mebibyte..<2 * mebibyte)
        let straddling = plan.claim(1, exactly: 500..<2 * mebibyte, now: now)
        #expect(straddling == nil)
    }

    @Test("ranges given back merge, and are shared again a piece at a time")
    func releasedRangesAreSharedAgain() throws {
        let now = ContinuousClock.now
        var plan = SegmentPlan(total: 8 * mebibyte, completed: [], minimumSize: mebibyte)
        plan.divide(into: 4)
        let claims = (0..<4).map { plan.claim($0, now: now) }
        _ = try claims.map(segment)
        // Connections 2 and 3 are refused: their pieces merge with the pending ones into one range ...
        plan.release(2)
        plan.release(3)
        #expect(plan.pending == [2 * mebibyte..<8 * mebibyte])
        // ... which the next claims take one piece (1 MiB) at a time, in file order.
        let next = plan.claim(4, now: now)
        #expect(try segment(next).start == 2 * mebibyte && segment(next).end == 3 * mebibyte)
        #expect(plan.pending == [3 * mebibyte..<8 * mebibyte])
    }

    @Test("a segment under two minimum sizes is not split; release gives its rest back, merged")
    func releaseAndMinimum() throws {
        let now = ContinuousClock.now
        var plan = SegmentPlan(total: 3 * mebibyte / 2, completed: [], minimumSize: mebibyte)
        let whole = plan.claim(0, now: now)
        let only = try segment(whole)
        #expect(only.start == 0 && only.end == 3 * mebibyte / 2)
        let nothing = plan.claim(1, now: now + .seconds(5))
        #expect(nothing == SegmentPlan.Claim.none)
        plan.advance(0, to: 500_000)
        plan.release(0)
        #expect(plan.pending == [500_000..<3 * mebibyte / 2])
        #expect(plan.completed == [0..<500_000])
        #expect(!plan.isComplete)
        let rest = plan.claim(1, now: now)
        let again = try segment(rest)
        plan.advance(1, to: again.end)
        #expect(plan.isComplete)
        #expect(plan.completed == [0..<3 * mebibyte / 2])
        #expect(plan.contiguousEnd == 3 * mebibyte / 2)
    }

    @Test("with a low-speed limit, a connection with nothing to take waits while a segment runs, then takes its rest")
    func waitsWhileRunning() throws {
        let now = ContinuousClock.now
        var plan = SegmentPlan(total: 3 * mebibyte / 2, completed: [], minimumSize: mebibyte)
        _ = try segment(plan.claim(0, now: now))
        // Under two minimum sizes: no split. Without the limit the idle connection leaves; with it, it waits.
        #expect(plan.claim(1, now: now + .seconds(5)) == SegmentPlan.Claim.none)
        #expect(plan.claim(1, now: now + .seconds(5), waitsWhileRunning: true) == .wait)
        // The slow segment is aborted: its rest goes back and the waiting connection takes it from where it stood.
        plan.advance(0, to: 300_000)
        plan.release(0)
        let rest = try segment(plan.claim(1, now: now + .seconds(6), waitsWhileRunning: true))
        #expect(rest.position == 300_000 && rest.end == 3 * mebibyte / 2)
        // The aborted connection, asking again, waits for that one; once it is done, nobody waits.
        #expect(plan.claim(0, now: now + .seconds(6), waitsWhileRunning: true) == .wait)
        plan.advance(1, to: rest.end)
        #expect(plan.claim(0, now: now + .seconds(7), waitsWhileRunning: true) == SegmentPlan.Claim.none)
        #expect(plan.isComplete)
    }

    @Test("the plan starts from the ranges done, clipped and merged")
    func startsFromCompleted() {
        let plan = SegmentPlan(
            total: 100, completed: [10..<20, 15..<30, 90..<200, 50..<50], minimumSize: 1)
        #expect(plan.pending == [0..<10, 30..<90])
        #expect(plan.completed == [10..<30, 90..<100])
        #expect(plan.doneBytes == 30)
    }

    @Test("the segment log reads back what was written; damaged lines are skipped")
    func segmentLog() throws {
        let path = makeTemporaryDirectory() + "/t.segments"
        let log = try SegmentLog(path: path)
        try log.write(slot: 0, start: 0, position: 65_536)
        try log.write(slot: 2, start: 1 << 20, position: (1 << 20) + 131_072)
        try log.write(slot: 0, start: 0, position: 196_608)
        // Slot 1 was never written: a hole of zeros, skipped.
        let written: [Range<Int64>] = [0..<196_608, 1_048_576..<1_179_648]
        #expect(SegmentLog.ranges(at: path) == written)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: UInt64(SegmentLog.header.count + 2 * SegmentLog.lineLength + 3))
        handle.write(Data("x".utf8))
        try handle.close()
        #expect(SegmentLog.ranges(at: path) == [written[0]])
        try Data("not a log\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(SegmentLog.ranges(at: path).isEmpty)
        #expect(SegmentLog.ranges(at: path + ".missing").isEmpty)
    }
}
