import NIOConcurrencyHelpers

/// Counts attempts per (scenario, run, route), so each request knows which scenario step it gets.
///
/// Called synchronously from libmicrohttpd's threads, hence a lock rather than an actor:
/// a request handler cannot suspend. A run is any client-chosen string that isolates one test's
/// attempts from another's, so tests running at the same time against one server do not interfere.
public final class ScenarioCounters: Sendable {
    private struct Key: Hashable {
        var scenario: String
        var run: String
        var route: String
    }

    private let counts = NIOLockedValueBox<[Key: Int]>([:])

    /// Makes a set of counters, all at zero.
    public init() {}

    /// Counts one more attempt and returns its number.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name (`Scenario.mainRoute` for the scenario's own URL).
    /// - Returns: the attempt number, 1 for the first request.
    public func nextAttempt(scenario: String, run: String, route: String) -> Int {
        counts.withLockedValue { counts in
            let next = counts[Key(scenario: scenario, run: run, route: route), default: 0] + 1
            counts[Key(scenario: scenario, run: run, route: route)] = next
            return next
        }
    }

    /// Takes an arrival number and counts one more attempt under one lock, so that for every (scenario, run,
    /// route) the attempts follow the arrival numbers.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name.
    ///   - arrival: takes the next arrival number; called once, under the lock.
    /// - Returns: the arrival number and the attempt number.
    public func nextAttempt(
        scenario: String, run: String, route: String, arrival: () -> Int
    ) -> (arrival: Int, attempt: Int) {
        counts.withLockedValue { counts in
            let key = Key(scenario: scenario, run: run, route: route)
            let next = counts[key, default: 0] + 1
            counts[key] = next
            return (arrival(), next)
        }
    }

    /// Takes an arrival number and counts one more attempt under one lock, unless `reclaim` says the latest attempt
    /// is free again (its request was left by the client before any fault fired): the new request then takes that
    /// same attempt.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name.
    ///   - arrival: takes the next arrival number; called once, under the lock.
    ///   - reclaim: given the latest attempt (when there is one), whether it may be taken again; called under the
    ///     lock.
    /// - Returns: the arrival number and the attempt number.
    public func nextAttempt(
        scenario: String, run: String, route: String, arrival: () -> Int, reclaim: (Int) -> Bool
    ) -> (arrival: Int, attempt: Int) {
        counts.withLockedValue { counts in
            let key = Key(scenario: scenario, run: run, route: route)
            let latest = counts[key, default: 0]
            let next = latest > 0 && reclaim(latest) ? latest : latest + 1
            counts[key] = next
            return (arrival(), next)
        }
    }

    /// The number of the latest attempt (how many were counted), without counting one.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name.
    /// - Returns: the number of attempts so far, 0 if none.
    public func currentAttempt(scenario: String, run: String, route: String) -> Int {
        counts.withLockedValue { $0[Key(scenario: scenario, run: run, route: route)] ?? 0 }
    }

    /// Gives back `attempt` when it is still the latest of (scenario, run, route), so the next request takes the same
    /// number (and meets the same step): for a probe, which should not spend the scenario's faulted attempt. An
    /// attempt a later request has already followed is not given back (that request already met the next step).
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name.
    ///   - attempt: the attempt to give back.
    /// - Returns: whether it was given back.
    @discardableResult
    public func giveBack(scenario: String, run: String, route: String, attempt: Int) -> Bool {
        counts.withLockedValue { counts in
            let key = Key(scenario: scenario, run: run, route: route)
            guard counts[key] == attempt else { return false }
            counts[key] = attempt - 1
            return true
        }
    }

    /// Forgets every count, so the next request to any route is attempt 1 again.
    public func reset() {
        counts.withLockedValue { $0.removeAll() }
    }

    /// Forgets the counts of one run of one scenario (all its routes), leaving other runs alone.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    public func reset(scenario: String, run: String) {
        counts.withLockedValue { counts in
            counts = counts.filter { $0.key.scenario != scenario || $0.key.run != run }
        }
    }
}
