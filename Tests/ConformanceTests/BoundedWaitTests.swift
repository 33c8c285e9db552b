import Foundation
import TestSupport
import Testing

@testable import Conformance

/// The harness's bounded wait on a client that may never stop (a hung in-process engine).
@Suite("Bounded wait")
struct BoundedWaitTests {
    @Test("work that ends within the limit is waited for to its end")
    func finishedWork() async {
        let ran = Flag()
        // A deadline for work that ends (stretched by the time scale), unlike the limit below, which must run out.
        let finished = await finishes(within: scaled(.seconds(10))) {
            try? await Task.sleep(for: .milliseconds(20))
            ran.set()
        }
        #expect(finished)
        #expect(ran.isSet)
    }

    @Test("work that never ends is left behind at the limit, and the wait says so")
    func stuckWork() async {
        let started = ContinuousClock.now
        let gate = Flag()
        let finished = await finishes(within: .milliseconds(300)) {
            // Runs until the test opens the gate below, long after the limit: a stand-in for a deadlocked engine.
            while !gate.isSet { try? await Task.sleep(for: .milliseconds(5)) }
        }
        let waited = ContinuousClock.now - started
        gate.set()
        #expect(!finished)
        #expect(waited >= .milliseconds(300))
    }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
