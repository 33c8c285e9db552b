import Conformance
import TestSupport

extension MatrixRunner.Options {
    /// The runner's defaults with each pair's deadline stretched by the time scale (`scaled`), for the tests that
    /// run scenarios, and the rows' `max-elapsed` allowed ten times over, times the scale (`timeAllowance`). The
    /// runner sees a client's exit from a task on the cooperative pool, which other tests' CPU-bound work can hold
    /// for seconds, minutes under TSAN: a python client's run on a 404 measured 13 s of a 5 s row on a loaded CI
    /// machine and 140 s under TSAN. Hangs stay bounded by the pair deadline, the judge's time rule has its own tests
    /// (`JudgeTests`, `HarnessRerunJudgeTests`), and `scripts/fault-matrix --ci` judges the engine's columns with
    /// the rows' own bounds. The clients' own timeouts (idle, connect) are part of what a scenario tests and stay as
    /// they are.
    static var forTests: Self {
        var options = Self()
        options.pairTimeout = scaled(options.pairTimeout)
        options.slowPairTimeout = scaled(options.slowPairTimeout)
        options.timeAllowance = 10 * testTimeScale
        return options
    }
}
