import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The token bucket as a pure value, on a clock the test moves by hand.
@Suite("Token bucket")
struct TokenBucketTests {
    /// A clock that only moves when told to.
    struct FakeClock {
        private(set) var now = ContinuousClock.now
        mutating func advance(_ duration: Duration) { now += duration }
    }

    @Test("a full bucket lets its capacity through at once; a read past it waits exactly for the debt")
    func debt() {
        let clock = FakeClock()
        var bucket = TokenBucket(bytesPerSecond: 1000, capacity: 100, now: clock.now)
        #expect(bucket.take(100, at: clock.now) == .zero)
        #expect(bucket.take(500, at: clock.now) == .milliseconds(500))
        #expect(bucket.wait(at: clock.now) == .milliseconds(500))
        // Asking charges nothing.
        #expect(bucket.wait(at: clock.now) == .milliseconds(500))
    }

    @Test("waiting what it said pays the debt; a long pause refills no more than the capacity")
    func refill() {
        var clock = FakeClock()
        var bucket = TokenBucket(bytesPerSecond: 1000, capacity: 100, now: clock.now)
        let wait = bucket.take(300, at: clock.now)
        #expect(wait == .milliseconds(200))
        clock.advance(.milliseconds(100))
        #expect(bucket.wait(at: clock.now) == .milliseconds(100))
        clock.advance(.milliseconds(100))
        #expect(bucket.wait(at: clock.now) == .zero)
        clock.advance(.seconds(60))
        #expect(bucket.take(100, at: clock.now) == .zero)
        #expect(bucket.take(1, at: clock.now) == .milliseconds(1))
    }

    @Test("a clock read out of order takes no tokens away")
    func outOfOrder() {
        var clock = FakeClock()
        let early = clock.now
        clock.advance(.seconds(1))
        var bucket = TokenBucket(bytesPerSecond: 1000, capacity: 100, now: clock.now)
        #expect(bucket.take(50, at: early) == .zero)
        #expect(bucket.tokens == 50)
    }

    @Test("the default burst is a tenth of a second of traffic, at least one byte")
    func defaultCapacity() {
        #expect(TokenBucket.defaultCapacity(forRate: 256 << 10) == 26214)
        #expect(TokenBucket.defaultCapacity(forRate: 5) == 1)
        #expect(TokenBucket(bytesPerSecond: 1 << 20, now: .now).capacity == Double((1 << 20) / 10))
    }

    @Test(
        "readers that read whenever allowed never exceed rate × time + capacity + one read each, over any window",
        arguments: [1, 4])
    func averageIsBounded(readers: Int) {
        var clock = FakeClock()
        let start = clock.now
        let rate: Int64 = 256 << 10
        var bucket = TokenBucket(bytesPerSecond: rate, now: clock.now)
        // Each reader reads when its wait is over; reads of uneven sizes, up to 64 KiB.
        var nextRead = [ContinuousClock.Instant](repeating: clock.now, count: readers)
        var sizes = (0..<readers).map { UInt32(1000 + $0 * 7919) }
        var reads: [(at: ContinuousClock.Instant, bytes: Int)] = []
        while clock.now - start < .seconds(20) {
            for reader in 0..<readers where nextRead[reader] <= clock.now {
                let size = Int(sizes[reader] % (64 << 10)) + 1
                sizes[reader] = sizes[reader] &* 31 &+ 17
                reads.append((clock.now, size))
                nextRead[reader] = clock.now + bucket.take(size, at: clock.now)
            }
            clock.advance(.milliseconds(1))
        }
        let total = reads.reduce(0) { $0 + $1.bytes }
        // Fast enough: a reader that reads whenever allowed gets near the rate (within a read per reader).
        #expect(Double(total) >= Double(rate) * 20 - Double(readers * (64 << 10)))
        // Never faster, over any window starting at a read.
        let slack = Double(bucket.capacity) + Double(readers * (64 << 10))
        for first in stride(from: 0, to: reads.count, by: max(1, reads.count / 50)) {
            var bytes = 0
            for read in reads[first...] {
                bytes += read.bytes
                let window = (read.at - reads[first].at).seconds
                #expect(Double(bytes) <= Double(rate) * window + slack)
            }
        }
    }
}

/// Bandwidth limits against a real rangeserver: lower bounds on elapsed time only (no timed assertion of speed).
@Suite("Bandwidth limit")
struct BandwidthLimitTests {
    @Test("a download's own limit in the API: 512 KiB at 256 KiB/s takes at least 1.5 s and arrives whole")
    func perDownloadLimit() async throws {
        try await withEngine { server, engine, dir in
            let started = ContinuousClock.now
            let id = try await engine.add(
                .init(
                    url: server.baseURL + "/bytes/512K?seed=3101", destination: dir + "/limited",
                    maximumBytesPerSecond: 256 << 10))
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            #expect(
                result
                    == .completed(
                        path: dir + "/limited", sha256: expectedSHA256(size: 512 << 10, seed: 3101), bytes: 512 << 10))
            // The burst (25.6 KiB) and the last read (at most 64 KiB) come free: (512 - 25.6 - 64) / 256 = 1.65 s.
            #expect(elapsed >= .milliseconds(1500), "took \(elapsed)")
            // Another download in the same engine has no limit of its own.
            let free = try await engine.add(
                .init(url: server.baseURL + "/bytes/64K?seed=3102", destination: dir + "/f"))
            #expect(
                await engine.result(of: free)
                    == .completed(
                        path: dir + "/f", sha256: expectedSHA256(size: 64 << 10, seed: 3102), bytes: 64 << 10))
        }
    }

    @Test("the segments of a -x 4 download share its limit: 2 MiB at 512 KiB/s takes at least 3 s")
    func segmentsShareTheLimit() async throws {
        let configuration = testConfiguration {
            $0.connectionsPerFile = 4
            $0.minimumSegmentSize = 256 << 10
        }
        try await withEngine(configuration) { server, engine, dir in
            let path = "/bytes/2M?seed=3106"
            let started = ContinuousClock.now
            let id = try await engine.add(
                .init(url: server.baseURL + path, destination: dir + "/x4", maximumBytesPerSecond: 512 << 10))
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            #expect(
                result
                    == .completed(path: dir + "/x4", sha256: expectedSHA256(size: 2 << 20, seed: 3106), bytes: 2 << 20))
            // Segmented indeed: more than one range was asked for.
            #expect(Set(await settledRequests(server, path).compactMap { $0.requestHeaders["range"] }).count > 1)
            // Four connections at 512 KiB/s each would take about 1 s; sharing it, (2048 - 51.2 - 4 × 64) / 512 =
            // 3.4 s at the least.
            #expect(elapsed >= .milliseconds(3000), "took \(elapsed)")
        }
    }

    @Test("through an HTTP proxy the limit holds too: 1 MiB at 256 KiB/s takes at least 2.5 s")
    func throughProxy() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                let configuration = testConfiguration {
                    $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port))
                    $0.maximumBytesPerSecond = 256 << 10
                }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    let started = ContinuousClock.now
                    let id = try await engine.add(
                        .init(url: server.baseURL + "/bytes/1M?seed=3105", destination: dir + "/proxied"))
                    let result = await engine.result(of: id)
                    let elapsed = ContinuousClock.now - started
                    #expect(
                        result
                            == .completed(
                                path: dir + "/proxied", sha256: expectedSHA256(size: 1 << 20, seed: 3105),
                                bytes: 1 << 20))
                    #expect(proxy.requests.contains { $0.line.contains("/bytes/1M?seed=3105") })
                    // The proxy client hands over the parts of one socket read (up to 4 × 64 KiB) before the hold
                    // applies: (1024 - 25.6 - 256) / 256 = 2.9 s at the least.
                    #expect(elapsed >= .milliseconds(2500), "took \(elapsed)")
                }
            }
        }
    }

    @Test("a read held back by the limit is not idle: waits longer than the idle timeout cause no retry")
    func heldReadsAreNotIdle() async throws {
        // At 32 KiB/s a read of 16 KiB or more is held back longer than the 300 ms idle timeout. The test expects
        // the timeout never to fire, so it is stretched by the time scale (a head or a read that a loaded machine
        // delays must not look idle) and the limit slowed by as much, so that every such read still outlasts it.
        let configuration = testConfiguration { $0.timeouts.idle = scaled(.milliseconds(300)) }
        let limit = Int64(Double(32 << 10) / testTimeScale)
        try await withEngine(configuration) { server, engine, dir in
            let log = EventLog(engine.events())
            let id = try await engine.add(
                .init(
                    url: server.baseURL + "/bytes/128K?seed=3104", destination: dir + "/held",
                    maximumBytesPerSecond: limit))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/held", sha256: expectedSHA256(size: 128 << 10, seed: 3104), bytes: 128 << 10))
            let retries = log.all.filter { if case .retrying = $0 { true } else { false } }
            #expect(retries.isEmpty, "\(retries)")
            #expect(await settledRequests(server, "/bytes/128K?seed=3104").count == 1)
        }
    }

    @Test("a limit of 0 is refused by add and by the engine's configuration")
    func nonPositiveLimits() async throws {
        _ = try await withEngine { server, engine, dir in
            await #expect(throws: DownloadError.self) {
                try await engine.add(
                    .init(url: server.baseURL + "/bytes/1K", destination: dir + "/z", maximumBytesPerSecond: 0))
            }
        }
        #expect(throws: DownloadError.self) {
            _ = try DownloadEngine(
                stateDirectory: makeTemporaryDirectory() + "/.rangefetch",
                configuration: testConfiguration { $0.maximumBytesPerSecond = -1 })
        }
    }

    @Test("rangefetch --limit-rate 256K: 1 MiB takes at least 3.5 s")
    func cliLimitRate() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let started = ContinuousClock.now
            let child = try await Child.start(
                [server.baseURL + "/bytes/1M?seed=3103", "-o", dir + "/one", "--limit-rate", "256K"],
                logs: dir + "/one")
            #expect(try await child.wait() == 0)
            let elapsed = ContinuousClock.now - started
            #expect(try sha256(ofFile: dir + "/one") == expectedSHA256(size: 1 << 20, seed: 3103))
            // (1024 - 25.6 burst - 64 last read) / 256 = 3.65 s at the least.
            #expect(elapsed >= .milliseconds(3500), "took \(elapsed)")
        }
    }

    @Test("rangefetch --limit-rate is shared by -j 4 downloads: 4 × 250 KiB at 256K takes at least 2.5 s")
    func cliLimitShared() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            // Four sizes, so four output names.
            let sizes = [250, 251, 252, 253]
            let urls = sizes.map { server.baseURL + "/bytes/\($0)K?seed=3111" }
            let started = ContinuousClock.now
            let child = try await Child.start(
                urls + ["-o", dir + "/out", "-j", "4", "--limit-rate", "256K"], logs: dir + "/four")
            #expect(try await child.wait() == 0)
            let elapsed = ContinuousClock.now - started
            for size in sizes {
                #expect(try sha256(ofFile: dir + "/out/\(size)K") == expectedSHA256(size: size << 10, seed: 3111))
            }
            // Each under a limit of its own would take about 1 s, all four at once; shared, (1006 - 25.6 burst -
            // 4 × 64 last reads) / 256 = 2.8 s at the least.
            #expect(elapsed >= .milliseconds(2500), "took \(elapsed)")
        }
    }

    @Test("a bad --limit-rate is one line on stderr and exit 64", arguments: ["0", "fast", "-5K", "1.5X", "K", "2M/h"])
    func cliBadRate(value: String) async throws {
        let dir = makeTemporaryDirectory()
        let child = try await Child.start(
            ["http://127.0.0.1:1/x", "-o", dir + "/x", "--limit-rate=" + value], logs: dir + "/bad")
        #expect(try await child.wait() == 64)
        #expect(child.errors.split(separator: "\n").count == 1, "\(child.errors)")
        #expect(child.errors.contains("--limit-rate"))
    }
}
