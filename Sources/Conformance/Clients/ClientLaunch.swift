import Foundation

/// One start of a client program during a run: when, why, and how it ended.
///
/// The runner hands the launches to the judge in ``RunFacts/launches``, which attributes each request to the launch
/// that made it by the request's arrival time: a request belongs to the last launch started at or before it arrived.
/// Requests (and time) of a ``Reason/harnessRerun`` are the harness's doing, not the client's, and no bound counts
/// them.
public struct ClientLaunch: Hashable, Sendable {
    /// Why the program was started.
    public enum Reason: String, Hashable, Sendable {
        /// The run's first start.
        case first
        /// The start after a scenario step stopped the program: a `kill-at` restart or a `pause-at` resume. The
        /// scenario asks for it, so what it does counts like the first start.
        case stepRestart = "step-restart"
        /// The harness ran the program again after an exit its definition declares transient (`--transient`, or a
        /// built-in's documented codes): a user's `until tool; do sleep 1; done`, which the client did not ask for.
        case harnessRerun = "harness-rerun"
    }

    /// Why it was started.
    public var reason: Reason
    /// When it was started (wall clock, the journal's clock).
    public var started: Date
    /// When the harness saw it end; nil while it runs, or when it was never seen to end.
    public var ended: Date?
    /// When a scenario step stopped it (the harness sent the kill, or the pause began); nil when no step did.
    public var stopped: Date?
    /// Its exit status as a shell reports it (`128 + N` for a death by signal N); nil while it runs.
    public var exitStatus: Int32?

    /// Makes a launch.
    ///
    /// - Parameters:
    ///   - reason: why it was started.
    ///   - started: when.
    ///   - ended: when it ended, if it has.
    ///   - exitStatus: its exit status, if it has ended.
    ///   - stopped: when a scenario step stopped it, if one did.
    public init(reason: Reason, started: Date, ended: Date? = nil, exitStatus: Int32? = nil, stopped: Date? = nil) {
        self.stopped = stopped
        self.reason = reason
        self.started = started
        self.ended = ended
        self.exitStatus = exitStatus
    }

    /// Milliseconds since 1970 of `started`, rounded down: the journal's `arrivalTime` resolution.
    var startedMilliseconds: Int64 { Int64((started.timeIntervalSince1970 * 1000).rounded(.down)) }
}
