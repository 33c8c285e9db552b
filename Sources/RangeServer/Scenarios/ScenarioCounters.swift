import NIOConcurrencyHelpers

/// Counts attempts per (scenario, run, route), so each request knows which scenario step it gets.
///
/// Called synchronously from libmicrohttpd's threads, hence a lock rather than an actor:
/// a request handler cannot suspend. A run is any client-chosen string that isolates one test's
/// attempts from another's, so tests running at the same time against one server do not interfere.
///
/// Because the client chooses the run, the counts are bounded (``Retention``): a count unused for the idle expiry
/// is forgotten, and past the limit the least recently used is; a run whose count was forgotten starts again at
/// attempt 1.
package final class ScenarioCounters: Sendable {
    /// What one count is kept under.
    struct Key: Hashable {
        var scenario: String
        var run: String
        var route: String
    }

    /// The attempts counted, by key.
    private let counts: NIOLockedValueBox<BoundedTable<Key, Int>>
    private let clock: @Sendable () -> ContinuousClock.Instant

    /// Makes a set of counters, all at zero.
    ///
    /// - Parameters:
    ///   - retention: how many counts are kept, and how long an unused one is.
    ///   - clock: the time (a test moves it to expire counts).
    package init(
        retention: Retention = .runs, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        counts = NIOLockedValueBox(BoundedTable(retention))
        self.clock = clock
    }

    /// Counts one more attempt and returns its number.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name (`Scenario.mainRoute` for the scenario's own URL).
    /// - Returns: the attempt number, 1 for the first request.
    package func nextAttempt(scenario: String, run: String, route: String) -> Int {
        let key = Key(scenario: scenario, run: run, route: route)
        return counts.withLockedValue { counts in
            counts.update(forKey: key, now: clock(), default: { 0 }) { count in
                count += 1
                return count
            }
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
    package func nextAttempt(
        scenario: String, run: String, route: String, arrival: () -> Int
    ) -> (arrival: Int, attempt: Int) {
        let key = Key(scenario: scenario, run: run, route: route)
        return counts.withLockedValue { counts in
            let attempt = counts.update(forKey: key, now: clock(), default: { 0 }) { count in
                count += 1
                return count
            }
            return (arrival(), attempt)
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
    package func nextAttempt(
        scenario: String, run: String, route: String, arrival: () -> Int, reclaim: (Int) -> Bool
    ) -> (arrival: Int, attempt: Int) {
        let key = Key(scenario: scenario, run: run, route: route)
        return counts.withLockedValue { counts in
            let attempt = counts.update(forKey: key, now: clock(), default: { 0 }) { count in
                if count == 0 || !reclaim(count) { count += 1 }
                return count
            }
            return (arrival(), attempt)
        }
    }

    /// The number of the latest attempt (how many were counted), without counting one.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    ///   - route: the route name.
    /// - Returns: the number of attempts so far, 0 if none (or if the count was forgotten).
    package func currentAttempt(scenario: String, run: String, route: String) -> Int {
        let key = Key(scenario: scenario, run: run, route: route)
        return counts.withLockedValue { $0.peekValue(forKey: key, now: clock()) ?? 0 }
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
    package func giveBack(scenario: String, run: String, route: String, attempt: Int) -> Bool {
        let key = Key(scenario: scenario, run: run, route: route)
        return counts.withLockedValue { counts in
            guard counts.peekValue(forKey: key, now: clock()) == attempt else { return false }
            counts.set(attempt - 1, forKey: key, now: clock())
            return true
        }
    }

    /// Forgets every count, so the next request to any route is attempt 1 again.
    package func reset() {
        counts.withLockedValue { $0.removeAll() }
    }

    /// Forgets the counts of one run of one scenario (all its routes), leaving other runs alone.
    ///
    /// - Parameters:
    ///   - scenario: the scenario name.
    ///   - run: the run identifier.
    package func reset(scenario: String, run: String) {
        counts.withLockedValue { counts in
            _ = counts.removeAll { key, _ in key.scenario == scenario && key.run == run }
        }
    }

    /// How many counts are held now: one per route of a run that was asked for and not yet forgotten.
    package var heldCount: Int {
        counts.withLockedValue { counts in
            counts.expire(now: clock())
            return counts.count
        }
    }
}
