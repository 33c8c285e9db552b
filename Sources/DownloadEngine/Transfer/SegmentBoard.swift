import Foundation

/// The ``SegmentPlan`` of a running segmented download, shared by its connections (each body drains on its
/// connection's event loop) under a lock.
final class SegmentBoard: @unchecked Sendable {
    private let lock = NSLock()
    private var plan: SegmentPlan
    private var nextSlot = 0
    /// Connections still working (not exited).
    private var alive: Set<Int> = []
    private var requestsHeldUntil = ContinuousClock.now
    private var restartOffered = false
    private var restartResponse: TransportResponse?

    init(_ plan: SegmentPlan) { self.plan = plan }

    func withPlan<T>(_ body: (inout SegmentPlan) -> T) -> T { lock.withLock { body(&plan) } }

    var snapshot: SegmentPlan { lock.withLock { plan } }

    /// A new slot in the segment log for a segment about to start.
    func takeSlot() -> Int {
        lock.withLock {
            defer { nextSlot += 1 }
            return nextSlot
        }
    }

    /// When the next request of the download may be sent: after the latest `Retry-After`.
    var notBefore: ContinuousClock.Instant { lock.withLock { requestsHeldUntil } }

    /// Holds back every new request for `duration` (a server's `Retry-After`).
    func holdRequests(for duration: Duration) {
        lock.withLock { requestsHeldUntil = max(requestsHeldUntil, .now + duration) }
    }

    /// Keeps a connection's 200 as the restart's body if it is the first offered; `false` when another was.
    func offerRestart(_ response: TransportResponse) -> Bool {
        lock.withLock {
            guard !restartOffered else { return false }
            restartOffered = true
            restartResponse = response
            return true
        }
    }

    /// The response kept by ``offerRestart(_:)``, once.
    func takeRestartResponse() -> TransportResponse? {
        lock.withLock {
            defer { restartResponse = nil }
            return restartResponse
        }
    }

    func enter(_ connection: Int) { _ = lock.withLock { alive.insert(connection) } }

    /// Marks `connection` gone, returning its unfinished bytes to the pending ranges.
    func exit(_ connection: Int) {
        lock.withLock {
            plan.release(connection)
            alive.remove(connection)
        }
    }

    /// Whether `connection` is the only one still working.
    func isLast(_ connection: Int) -> Bool { lock.withLock { alive == [connection] } }
}
