import Foundation
import RangeServer

/// Which start of the client made each request, and how much of the run the harness's re-runs took: what the bounds
/// leave out.
extension RunFacts {
    /// The index in ``launches`` of the launch that made `entry`: the last one started at or before the request
    /// arrived (both to the millisecond, on the wall clock the journal uses).
    ///
    /// A program that has exited sends nothing more, and the harness waits for one start to end before the next, so
    /// arrival times split the requests between launches exactly, up to a request in the same millisecond as a
    /// restart after a kill (both count against the client either way).
    ///
    /// - Parameters:
    ///   - entry: a request of the run.
    /// - Returns: the index, or nil without launches or arrival time.
    public func launchIndex(of entry: JournalEntry) -> Int? {
        guard !launches.isEmpty, let arrived = JournalAnalysis.milliseconds(entry.arrivalTime) else { return nil }
        return launches.lastIndex { $0.startedMilliseconds <= arrived }
    }

    /// Whether `entry` was made by a harness re-run, which no bound counts against the client.
    ///
    /// - Parameters:
    ///   - entry: a request of the run.
    /// - Returns: true when the launch that made it is a ``ClientLaunch/Reason/harnessRerun``.
    public func isHarnessRerun(_ entry: JournalEntry) -> Bool {
        launchIndex(of: entry).map { launches[$0].reason == .harnessRerun } ?? false
    }

    /// The launches the harness made after a transient exit.
    public var harnessReruns: [ClientLaunch] { launches.filter { $0.reason == .harnessRerun } }

    /// The time the harness's re-runs took: for each, from the end of the launch before it (so the harness's pause
    /// between the two is included) to its own end (or the next launch's start, when it was stopped by a step).
    public var harnessRerunTime: Duration {
        var milliseconds: Int64 = 0
        for (index, launch) in launches.enumerated() where launch.reason == .harnessRerun {
            let from = index > 0 ? launches[index - 1].ended ?? launch.started : launch.started
            let to = launch.ended ?? (index + 1 < launches.count ? launches[index + 1].started : launch.started)
            milliseconds += max(0, Int64((to.timeIntervalSince(from) * 1000).rounded()))
        }
        return min(.milliseconds(milliseconds), elapsed)
    }

    /// The run's duration less ``harnessRerunTime``: what the elapsed-time bounds are judged on.
    public var clientElapsed: Duration { elapsed - harnessRerunTime }

    /// Whether `entry` is a response the harness ended by a step (a kill, a pause): it was made by a launch a step
    /// stopped, and it was still open when the step came. Such a response is not one the client left of its own
    /// accord, whatever the server saw.
    ///
    /// - Parameters:
    ///   - entry: a request of the run.
    /// - Returns: true when a step ended it.
    public func endedByStep(_ entry: JournalEntry) -> Bool {
        guard let index = launchIndex(of: entry), let stopped = launches[index].stopped,
            let ended = JournalAnalysis.milliseconds(entry.time)
        else { return false }
        // Both clocks are the wall clock to the millisecond; the server sees the connection end after the step.
        return ended + 1 >= Int64((stopped.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
