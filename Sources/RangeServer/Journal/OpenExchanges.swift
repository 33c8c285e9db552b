import NIOConcurrencyHelpers
import Synchronization

/// One request the server is still answering, from the arrival of its headers until its journal entry is stored.
final class OpenExchange: Sendable {
    /// The scenario run the target names, if any.
    let run: String?
    /// For a scenario GET that counted an attempt: where, and which.
    let scenario: String?
    let route: String?
    let attempt: Int?
    /// The exchange's connection, asked whether the client has gone.
    let connection: any ExchangeConnection
    /// Whether a fault of the response had fired (see `RequestContext.faultFired`); written on the connection's
    /// thread, read by another request's admission.
    let faultFired = Atomic<Bool>(false)
    /// Whether the response has met its drop and waits to see whether the client read up to it (see
    /// `BodyReader.drop()`): a client that then resets the connection had not, and left of its own accord.
    let dropWatched = Atomic<Bool>(false)
    /// Whether the attempt was given back already, by a later request's admission (see
    /// `OpenExchanges.reclaimAttempt`), so the exchange's end must not give it back again.
    let attemptGivenBack = Atomic<Bool>(false)

    init(run: String?, scenario: String?, route: String?, attempt: Int?, connection: any ExchangeConnection) {
        self.run = run
        self.scenario = scenario
        self.route = route
        self.attempt = attempt
        self.connection = connection
    }
}

/// The requests the server is still answering, in all and by scenario run, so a reader can wait for a run's journal
/// to be complete instead of guessing from a quiet moment.
///
/// A request opens when its headers have arrived (the moment it takes its arrival number) and closes once its
/// journal entry is stored, so when a run has no open request, every request of it the server has read is in the
/// journal. Requests whose bytes the server has not read yet are not known to it: a reader that waits for a client
/// to exit first, as the harness does, has every request of that client in the server's socket queues by then, and
/// read within one turn of the event loop.
///
/// Every request counts in `total`, an atomic (no lock on the path of a request outside a scenario); requests of a
/// scenario run are also kept by run under a lock, which they already take for their attempt number. A run leaves
/// the dictionary when its last request closes, so it holds only runs with a request open.
final class OpenExchanges: Sendable {
    private struct Waiter {
        var run: String?
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var runs: [String: [ObjectIdentifier: OpenExchange]] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Waiters given an identifier but not registered yet.
        var unregistered: Set<UInt64> = []
        /// Of those, the ones whose timeout or cancellation came first.
        var expired: Set<UInt64> = []
    }

    private let total = Atomic<Int>(0)
    /// Whether anyone waits: a close looks at the waiters only then.
    private let waiting = Atomic<Bool>(false)
    private let state = NIOLockedValueBox(State())

    init() {}

    /// Counts a request whose headers arrived.
    func open(_ exchange: OpenExchange) {
        total.wrappingAdd(1, ordering: .sequentiallyConsistent)
        guard let run = exchange.run else { return }
        state.withLockedValue { $0.runs[run, default: [:]][ObjectIdentifier(exchange)] = exchange }
    }

    /// Counts a request as answered and journaled (or ended without an entry), waking those it settles.
    func close(_ exchange: OpenExchange) {
        total.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        if let run = exchange.run {
            state.withLockedValue { state in
                state.runs[run]?[ObjectIdentifier(exchange)] = nil
                if state.runs[run]?.isEmpty == true { state.runs[run] = nil }
            }
        }
        // Sequentially consistent with the waiter's store then load (`settled`): either this close sees the
        // waiter, or the waiter sees this close's count.
        if waiting.load(ordering: .sequentiallyConsistent) { wakeSettled() }
    }

    /// How many requests are open: of `run`, or of the whole server when nil.
    func count(run: String?) -> Int {
        guard let run else { return total.load(ordering: .sequentiallyConsistent) }
        return state.withLockedValue { $0.runs[run]?.count ?? 0 }
    }

    /// Whether an open request of (scenario, run, route) holding attempt `latest` has been left by its client before
    /// any fault of it fired; if so, its attempt is marked given back, for the request being admitted to take.
    ///
    /// A client that reads the start of a response and closes it, then asks again at once, can send its next
    /// request before the server has noticed the close (the connection's thread notices it when it next writes):
    /// looking at the socket here keeps the probe from using up the attempt in that race. Called under the scenario
    /// counters' lock. How the client left is the exchange's connection's to say (`ExchangeConnection.departure`).
    ///
    /// - Returns: whether an attempt was reclaimed.
    func reclaimAttempt(scenario: String, run: String, route: String, latest: Int) -> Bool {
        state.withLockedValue { state in
            guard let open = state.runs[run] else { return false }
            for exchange in open.values
            where exchange.attempt == latest && exchange.route == route && exchange.scenario == scenario
                && !exchange.attemptGivenBack.load(ordering: .relaxed)
            {
                let departed = exchange.connection.departure
                let left =
                    exchange.dropWatched.load(ordering: .acquiring)
                    ? departed == .reset : departed != nil && !exchange.faultFired.load(ordering: .acquiring)
                guard left else { continue }
                exchange.attemptGivenBack.store(true, ordering: .relaxed)
                return true
            }
            return false
        }
    }

    /// Waits until no request of `run` (of the server, when nil) is open, or `timeout` has passed.
    ///
    /// - Returns: true when settled, false on timeout or cancellation.
    func settled(run: String?, timeout: Duration) async -> Bool {
        if count(run: run) == 0 { return true }
        let id = state.withLockedValue { state -> UInt64 in
            state.nextWaiter &+= 1
            state.unregistered.insert(state.nextWaiter)
            return state.nextWaiter
        }
        let timer = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLockedValue { state -> Bool? in
                    state.unregistered.remove(id)
                    if state.expired.remove(id) != nil { return false }
                    if Self.isSettled(run, state: state, total: total.load(ordering: .sequentiallyConsistent)) {
                        return true
                    }
                    state.waiters[id] = Waiter(run: run, continuation: continuation)
                    waiting.store(true, ordering: .sequentiallyConsistent)
                    // A close between the check above and this store saw no waiter: look once more.
                    if Self.isSettled(run, state: state, total: total.load(ordering: .sequentiallyConsistent)) {
                        state.waiters[id] = nil
                        if state.waiters.isEmpty { waiting.store(false, ordering: .sequentiallyConsistent) }
                        return true
                    }
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            expire(id)
        }
    }

    private static func isSettled(_ run: String?, state: State, total: Int) -> Bool {
        guard let run else { return total == 0 }
        return state.runs[run] == nil
    }

    /// Ends the wait of `id` with false; one not registered yet is marked, so it ends as it registers.
    private func expire(_ id: UInt64) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                if state.unregistered.contains(id) { state.expired.insert(id) }
                return nil
            }
            if state.waiters.isEmpty { waiting.store(false, ordering: .sequentiallyConsistent) }
            return waiter.continuation
        }
        continuation?.resume(returning: false)
    }

    private func wakeSettled() {
        let due = state.withLockedValue { state -> [CheckedContinuation<Bool, Never>] in
            let total = total.load(ordering: .sequentiallyConsistent)
            let ids = state.waiters.filter { Self.isSettled($0.value.run, state: state, total: total) }.map(\.key)
            let due = ids.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
            if state.waiters.isEmpty { waiting.store(false, ordering: .sequentiallyConsistent) }
            return due
        }
        for continuation in due { continuation.resume(returning: true) }
    }
}
