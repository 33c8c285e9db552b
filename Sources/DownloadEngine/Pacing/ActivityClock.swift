import Foundation

/// Last time bytes (or a response head) arrived, read by the idle watchdog, and the partial file's length as the
/// body writer last left it, read by the progress ticker while the body drains on the transport's thread.
final class ActivityClock: @unchecked Sendable {
    private let lock = NSLock()
    private var last: ContinuousClock.Instant
    /// Until when the engine itself holds back reading (a bandwidth limit): no time before it is idle time.
    private var held: ContinuousClock.Instant
    private var length: Int64 = 0

    init() {
        // One clock read for both.
        last = .now
        held = last
    }

    func touch() { lock.withLock { last = .now } }
    /// Counts as active until `instant`: a read held back by a bandwidth limit is not a silent server.
    func hold(until instant: ContinuousClock.Instant) { lock.withLock { held = max(held, instant) } }
    func advance(to length: Int64) {
        lock.withLock {
            last = .now
            self.length = length
        }
    }
    var idleFor: Duration { lock.withLock { ContinuousClock.now - max(last, held) } }
    var bytes: Int64 { lock.withLock { length } }
}
