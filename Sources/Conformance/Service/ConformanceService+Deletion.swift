import Foundation
import RangeServer

extension ConformanceService {
    /// `DELETE /_conformance/runs/{run}`: forgets a pending run, or removes a judged run's verdict from the report
    /// and from the results file (the cell shows the pair's previous verdict, if the file has one).
    ///
    /// - Throws: `notFound` for a string that was never a run token or a run already deleted, `gone` for a run
    ///   neither held nor in the file, `conflict` for a run whose report is being judged right now, `io` when the
    ///   results file cannot be rewritten.
    func deleteRun(_ run: String) throws(ConformanceError) -> ConformanceAPI.Removal {
        let now = configuration.clock()
        let pending: Result<Int, ConformanceError> = runs.withLockedValue { runs in
            guard case .pending(let pending) = runs.peekValue(forKey: run, now: now) else { return .success(0) }
            guard !pending.judging else { return .failure(.conflict("run '\(run)' is being judged; delete it after")) }
            runs.removeValue(forKey: run)
            return .success(1)
        }
        let forgotten = try pending.get()
        var verdicts = forgotten > 0 ? 0 : try store.remove { $0.run == run }
        let judged = runs.withLockedValue { runs -> Bool in
            guard case .judged = runs.peekValue(forKey: run, now: now) else { return false }
            runs.removeValue(forKey: run)
            return true
        }
        // Without a results file, a judged run that is no longer its cell's latest has its verdict only here.
        if judged { verdicts = max(verdicts, 1) }
        guard forgotten + verdicts > 0 else { throw missing(run) }
        remember(deleted: [run])
        return ConformanceAPI.Removal(verdicts: verdicts, pending: forgotten)
    }

    /// Keeps `runs` as deleted, so a later request naming one is told so (``missing(_:)``).
    private func remember(deleted runs: [String]) {
        let now = configuration.clock()
        deleted.withLockedValue { table in
            for run in runs { table.set((), forKey: run, now: now) }
        }
    }

    /// `DELETE /_conformance/columns/{column}`: removes a column of the report (a client label, with ` (https)` for
    /// its https runs) with every verdict under it, from the report and from the results file, and forgets the runs
    /// handed out under it and not yet reported, so none of them brings the column back.
    ///
    /// - Throws: `notFound` when no verdict or pending run is under the column, `io` when the results file cannot be
    ///   rewritten.
    func deleteColumn(_ column: String) throws(ConformanceError) -> ConformanceAPI.Removal {
        var removed: [String] = []
        let forgotten = runs.withLockedValue { runs in
            runs.removeAll { run, held in
                guard case .pending(let pending) = held, !pending.judging,
                    ResultStore.column(client: pending.client, scheme: pending.scheme) == column
                else { return false }
                removed.append(run)
                return true
            }
        }
        let verdicts = try store.remove {
            guard ResultStore.column(of: $0) == column else { return false }
            removed.append($0.run)
            return true
        }
        runs.withLockedValue { runs in
            _ = runs.removeAll { run, held in
                guard case .judged(let verdict) = held, ResultStore.column(of: verdict) == column else { return false }
                removed.append(run)
                return true
            }
        }
        remember(deleted: removed)
        guard forgotten + verdicts > 0 else {
            throw .notFound("no column '\(column)' in the report, and no run pending under it")
        }
        return ConformanceAPI.Removal(verdicts: verdicts, pending: forgotten)
    }
}
