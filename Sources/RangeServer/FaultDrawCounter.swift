import NIOConcurrencyHelpers

/// Numbers the requests that carry `probability`, per target, so each draws its own value (see `FaultChance`).
///
/// Only requests with `probability` come here, so a lock is no cost to the rest. At most `capacity` targets are
/// remembered; one more starts every count afresh (a client sending that many distinct probabilistic URLs is not
/// asking for a reproducible run, and the memory stays bounded).
final class FaultDrawCounter: Sendable {
    /// The most targets counted at once.
    static let capacity = 100_000

    private let counts = NIOLockedValueBox<[String: UInt64]>([:])

    /// Counts one more request to `target` and returns its number, 1 for the first.
    func next(for target: String) -> UInt64 {
        counts.withLockedValue { counts in
            if counts[target] == nil, counts.count >= Self.capacity { counts.removeAll() }
            let next = counts[target, default: 0] + 1
            counts[target] = next
            return next
        }
    }

    /// Forgets every count (`POST /_control/reset`).
    func reset() {
        counts.withLockedValue { $0.removeAll() }
    }
}
