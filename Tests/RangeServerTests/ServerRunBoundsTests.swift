import Foundation
import Testing

@testable import RangeServer

/// The server's per-run state is bounded: a run's attempt count is forgotten once unused for the idle expiry or
/// pushed out by newer runs beyond the limit, and the run then starts again at attempt 1.
@Suite("Server run bounds")
struct ServerRunBoundsTests {
    /// Attempt 1 is a 503, every later attempt a 200: the status says which attempt a request was.
    private static let twoSteps = """
        {
          "description": "The first attempt fails, the rest succeed.",
          "resource": "/bytes/1K?seed=3",
          "attempts": [{ "status": 503 }, {}]
        }
        """

    private func configuration(
        _ retention: Retention, clock: ManualClock
    ) throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("run-bounds")
        try Self.twoSteps.write(toFile: directory + "/two-steps.json", atomically: true, encoding: .utf8)
        return Fixtures.configuration {
            $0.scenariosDirectory = directory
            $0.runRetention = retention
            $0.clock = clock.read
        }
    }

    @Test("a run unused for the idle expiry starts again at attempt 1; one used within it goes on")
    func idleRunStartsAgain() async throws {
        let clock = ManualClock()
        let retention = Retention(limit: 100, idleExpiry: .seconds(60))
        try await withRangeServer(configuration(retention, clock: clock)) { server async throws in
            #expect(try await FaultWire.get(server, "/scenario/two-steps/idle").status == 503)
            #expect(try await FaultWire.get(server, "/scenario/two-steps/busy").status == 503)
            clock.advance(.seconds(59))
            #expect(try await FaultWire.get(server, "/scenario/two-steps/busy").status == 200)
            clock.advance(.seconds(2))
            // 61 s after its only request: forgotten, so this is attempt 1 again. `busy` was used 2 s ago.
            #expect(try await FaultWire.get(server, "/scenario/two-steps/idle").status == 503)
            #expect(try await FaultWire.get(server, "/scenario/two-steps/busy").status == 200)
            // A HEAD looks without counting and without keeping the run alive.
            clock.advance(.seconds(40))
            #expect(try await FaultWire.get(server, "/scenario/two-steps/busy", method: "HEAD").status == 200)
            clock.advance(.seconds(40))
            #expect(try await FaultWire.get(server, "/scenario/two-steps/busy").status == 503)
        }
    }

    @Test("beyond the limit the least recently used run is forgotten first")
    func limitForgetsOldestFirst() async throws {
        let clock = ManualClock()
        try await withRangeServer(configuration(Retention(limit: 2, idleExpiry: nil), clock: clock)) {
            server async throws in
            for run in ["a", "b", "c"] {
                #expect(try await FaultWire.get(server, "/scenario/two-steps/\(run)").status == 503)
            }
            // `a` went when `c` came; `b` is still counted.
            #expect(try await FaultWire.get(server, "/scenario/two-steps/b").status == 200)
            #expect(try await FaultWire.get(server, "/scenario/two-steps/a").status == 503)
            // `a` pushed `c` out (b was used more recently).
            #expect(try await FaultWire.get(server, "/scenario/two-steps/b").status == 200)
            #expect(try await FaultWire.get(server, "/scenario/two-steps/c").status == 503)
        }
    }

    @Test("a server refuses run bounds outside their ranges with one line")
    func badBoundsRefused() throws {
        var configuration = Fixtures.configuration { _ in }
        configuration.runRetention = Retention(limit: 0, idleExpiry: .seconds(5))
        #expect(throws: RangeServerError.invalidConfiguration("--run-limit must be from 1 to 100000000, got 0")) {
            try RangeServer.start(configuration)
        }
    }

    @Test("scenario counters: an expired or pushed-out count starts at 0, and peeking does not keep it")
    func counters() {
        let clock = ManualClock()
        let counters = ScenarioCounters(retention: Retention(limit: 2, idleExpiry: .seconds(10)), clock: clock.read)
        #expect(counters.nextAttempt(scenario: "s", run: "r", route: "") == 1)
        #expect(counters.nextAttempt(scenario: "s", run: "r", route: "") == 2)
        clock.advance(.seconds(9))
        #expect(counters.currentAttempt(scenario: "s", run: "r", route: "") == 2)
        clock.advance(.seconds(1))
        #expect(counters.currentAttempt(scenario: "s", run: "r", route: "") == 0)
        #expect(counters.nextAttempt(scenario: "s", run: "r", route: "") == 1)
        _ = counters.nextAttempt(scenario: "s", run: "r", route: "second")
        _ = counters.nextAttempt(scenario: "s", run: "other", route: "")
        #expect(counters.heldCount == 2)
        #expect(counters.currentAttempt(scenario: "s", run: "r", route: "") == 0)
        #expect(counters.currentAttempt(scenario: "s", run: "r", route: "second") == 1)
    }

    @Test("probability draws are counted per target under the same bounds")
    func faultDraws() {
        let clock = ManualClock()
        let draws = FaultDrawCounter(retention: Retention(limit: 2, idleExpiry: .seconds(10)), clock: clock.read)
        #expect(draws.next(for: "/a") == 1)
        #expect(draws.next(for: "/a") == 2)
        #expect(draws.next(for: "/b") == 1)
        #expect(draws.next(for: "/c") == 1)
        #expect(draws.heldCount == 2)
        #expect(draws.next(for: "/a") == 1)
        clock.advance(.seconds(10))
        #expect(draws.next(for: "/b") == 1)
        #expect(draws.heldCount == 1)
    }

    @Test("the digest cache keeps at most its capacity, the least recently used going first")
    func digestCacheBounded() {
        let cache = DigestCache()
        let representation = Representation.generated(length: 1, seed: 0, version: 1)
        for index in 0...DigestCache.capacity {
            _ = cache.compute(representation, key: "k\(index)")
        }
        #expect(cache.count == DigestCache.capacity)
        #expect(cache.digest(forKey: "k0") == nil)
        #expect(cache.digest(forKey: "k\(DigestCache.capacity)")?.hasPrefix("sha-256=:") == true)
    }
}
