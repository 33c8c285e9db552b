import Foundation
import NIOCore

/// One bandwidth limit shared by every reader under it (the engine's, or one download's segments), around a
/// ``TokenBucket``.
///
/// The lock is held for the arithmetic only: a reader that must wait is told how long, and waits without it (an
/// event loop's scheduled task, or a task's sleep).
final class BandwidthLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private var bucket: TokenBucket

    /// A limit of `bytesPerSecond` (above 0), full at first.
    init(bytesPerSecond: Int64) {
        bucket = TokenBucket(bytesPerSecond: bytesPerSecond, now: .now)
    }

    /// Charges `bytes` just read; returns how long to wait before the next read.
    func take(_ bytes: Int) -> Duration {
        let now = ContinuousClock.now
        return lock.withLock { bucket.take(bytes, at: now) }
    }

    /// How long to wait before reading at all (before a request is sent).
    var wait: Duration {
        let now = ContinuousClock.now
        return lock.withLock { bucket.wait(at: now) }
    }
}

/// The bandwidth limits one request's body is read under: the engine's (shared by every download) and its own
/// download's (shared by its segments). A request without limits carries no pacing at all (`nil`), so the
/// unlimited path costs one `nil` check per body part.
struct ReadPacing: Sendable {
    private let shared: BandwidthLimiter?
    private let own: BandwidthLimiter?
    /// The attempt's idle clock, told how long reading is held back, so that the idle timeout counts only the time
    /// the engine was willing to read: a 64 KiB read at 2 KiB/s waits 32 s.
    private var activity: ActivityClock?

    /// The pacing of `shared` and `own`, or `nil` when both are `nil`.
    init?(shared: BandwidthLimiter?, own: BandwidthLimiter?) {
        guard shared != nil || own != nil else { return nil }
        self.shared = shared
        self.own = own
    }

    /// The same limits, holding back `activity`'s idle clock while they hold back reading.
    func watched(by activity: ActivityClock) -> ReadPacing {
        var pacing = self
        pacing.activity = activity
        return pacing
    }

    /// Charges `bytes` just read to both limits; returns the longer wait before the next read.
    func take(_ bytes: Int) -> Duration {
        let delay = max(shared?.take(bytes) ?? .zero, own?.take(bytes) ?? .zero)
        if delay > .zero { activity?.hold(until: .now + delay) }
        return delay
    }

    /// Waits out ``wait`` (before a request is sent), not idle meanwhile.
    func waitBeforeRequest() async throws {
        let delay = wait
        guard delay > .zero else { return }
        activity?.hold(until: .now + delay)
        try await Task.sleep(for: delay)
    }

    /// How long to wait before sending a request: until neither limit is in debt.
    ///
    /// Without it, bodies that arrive in one read each (many small files) would never wait: the debt of a read is
    /// paid before the next read of the same connection, and such a connection reads once.
    var wait: Duration { max(shared?.wait ?? .zero, own?.wait ?? .zero) }

    /// The next read of the connection, held back by `delay` on its event loop (the back-pressure that delays it:
    /// nothing sleeps, nothing holds a lock).
    static func hold(for delay: Duration, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let (seconds, attoseconds) = delay.components
        let amount = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return eventLoop.scheduleTask(in: amount) {}.futureResult
    }
}
