import NIOConcurrencyHelpers

/// Numbers the requests that carry `probability`, per target, so each draws its own value (see `FaultChance`).
///
/// Only requests with `probability` come here, so a lock is no cost to the rest. A target's count is kept under the
/// server's run bounds (``Retention``): a target unused for the idle expiry starts counting afresh, and past the
/// limit the least recently used one does (a client sending that many distinct probabilistic URLs is not asking for
/// a reproducible run, and the memory stays bounded).
final class FaultDrawCounter: Sendable {
    private let counts: NIOLockedValueBox<BoundedTable<String, UInt64>>
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// Makes the counter.
    ///
    /// - Parameters:
    ///   - retention: how many targets are counted, and for how long unused.
    ///   - clock: the time.
    init(retention: Retention = .runs, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        counts = NIOLockedValueBox(BoundedTable(retention))
        self.clock = clock
    }

    /// Counts one more request to `target` and returns its number, 1 for the first.
    func next(for target: String) -> UInt64 {
        counts.withLockedValue { counts in
            counts.update(forKey: target, now: clock(), default: { 0 }) { count in
                count += 1
                return count
            }
        }
    }

    /// Forgets every count (`POST /_control/reset`).
    func reset() {
        counts.withLockedValue { $0.removeAll() }
    }

    /// How many targets are counted now (for tests).
    var heldCount: Int { counts.withLockedValue { $0.count } }
}
