import Conformance
import TestSupport

extension MatrixRunner.Options {
    /// The runner's defaults with each pair's deadline stretched by the time scale (`scaled`), for the tests that
    /// run scenarios, and the rows' `max-elapsed` allowed four times over (more under a larger scale): a test
    /// starting a client beside hundreds of others can wait seconds for its process to start, which is the
    /// machine's doing, not the client's. The clients' own timeouts (idle, connect) are part of what a scenario
    /// tests and stay as they are.
    static var forTests: Self {
        var options = Self()
        options.pairTimeout = scaled(options.pairTimeout)
        options.slowPairTimeout = scaled(options.slowPairTimeout)
        options.timeAllowance = max(4, testTimeScale)
        return options
    }
}
