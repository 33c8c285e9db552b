import Conformance
import TestSupport

extension MatrixRunner.Options {
    /// The runner's defaults with each pair's deadline and the wait for a run's journal to settle stretched by the
    /// time scale (`scaled`), for the tests that run scenarios. The clients' own timeouts (idle, connect) are part of
    /// what a scenario tests and stay as they are.
    static var forTests: Self {
        var options = Self()
        options.pairTimeout = scaled(options.pairTimeout)
        options.slowPairTimeout = scaled(options.slowPairTimeout)
        options.journalQuiet = scaled(options.journalQuiet)
        return options
    }
}
