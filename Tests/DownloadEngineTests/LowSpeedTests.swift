import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The low-speed decision as a pure value, on a clock the test moves by hand.
@Suite("Low-speed watch")
struct LowSpeedWatchTests {
    /// The watch's answers to the byte counts at the times (milliseconds after it started), in order.
    private func answers(
        bytesPerSecond: Int64 = 1000, window: Duration = .seconds(1), startingAt bytes: Int64 = 0,
        _ samples: [(milliseconds: Int, bytes: Int64)]
    ) -> [Bool] {
        let start = ContinuousClock.now
        var watch = LowSpeedWatch(bytesPerSecond: bytesPerSecond, window: window, bytes: bytes, now: start)
        return samples.map { watch.observe(bytes: $0.bytes, at: start + .milliseconds($0.milliseconds)) }
    }

    @Test("an attempt younger than the window is never too slow, even with no byte")
    func young() {
        let seen = answers(window: .seconds(2), [(500, 0), (1999, 0), (2000, 0)])
        #expect(seen == [false, false, true])
    }

    @Test("the average over the last window decides: below the rate is slow, at it is not")
    func average() {
        let ticks = Array(1...8)
        let slow = answers(startingAt: 500, ticks.map { ($0 * 250, 500 + Int64($0) * 249) })
        let steady = answers(startingAt: 500, ticks.map { ($0 * 250, 500 + Int64($0) * 250) })
        #expect(slow == ticks.map { $0 >= 4 })
        #expect(steady == ticks.map { _ in false })
    }

    @Test("a burst and a pause inside the window even out; a pause as long as the window does not")
    func burstAndPause() {
        // 1500 bytes in the first 250 ms, then nothing: the last second holds 1500 bytes at 1000 ms, none at 1250.
        let seen = answers([(250, 1500), (500, 1500), (750, 1500), (1000, 1500), (1250, 1500)])
        #expect(seen == [false, false, false, false, true])
    }

    @Test("a count that went down (a restart from zero) starts a new window")
    func restart() {
        let seen = answers(startingAt: 5000, [(900, 0), (1500, 100), (1900, 200)])
        #expect(seen == [false, false, true])
    }
}

/// The low-speed abort against a real rangeserver: the first attempt paced slow (`rate=` with a `probability` draw
/// that applies it to one request only), the others at full speed.
@Suite("Low-speed abort")
struct LowSpeedAbortTests {
    /// A `probability=0.1` draw that applies the faults to the first request of a target and to none of the next
    /// 29 (`fault-seed=203`), or to the second and none of the 28 after it (`fault-seed=458`): a `-x 2` download of
    /// 4 MiB makes about 18 requests.
    static let slowFirst = "rate=32K&probability=0.1&fault-seed=203"
    static let slowSecond = "rate=32K&probability=0.1&fault-seed=458"

    private func configuration(
        connections: Int = 1, maximumAborts: Int = 3, window: Duration = .seconds(1), scalesWindow: Bool = true
    ) -> DownloadConfiguration {
        testConfiguration {
            $0.connectionsPerFile = connections
            $0.minimumSegmentSize = 256 << 10
            // 256 KiB/s: the slow request brings 32 KiB/s, a full-speed one on loopback hundreds of MiB/s.
            $0.lowSpeed = .init(
                bytesPerSecond: 256 << 10, duration: scalesWindow ? scaled(window) : window,
                maximumAborts: maximumAborts)
        }
    }

    @Test("a slow attempt is aborted and resumed where it stood, with Range and If-Range")
    func singleStream() async throws {
        try await withEngine(configuration()) { server, engine, dir in
            let log = EventLog(engine.events())
            let path = "/bytes/1M?seed=3201&" + Self.slowFirst
            let id = try await engine.add(.init(url: server.baseURL + path, destination: dir + "/one"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(path: dir + "/one", sha256: expectedSHA256(size: 1 << 20, seed: 3201), bytes: 1 << 20)
            )
            #expect(
                log.all.contains {
                    if case .retrying(id, _, _, DownloadError.slowTransfer) = $0 { true } else { false }
                })
            // In the order the server received them: a response is journalled when it ends.
            let gets = await settledRequests(server, path).sorted { $0.arrival < $1.arrival }
            guard gets.count >= 2 else {
                Issue.record("expected a slow request and a resume, got \(gets.count)")
                return
            }
            let slow = gets[0]
            #expect(slow.faultsApplied == true && slow.outcome == .clientClosed, "\(slow.outcome)")
            #expect(slow.requestHeaders["range"] == nil)
            let resume = gets[1]
            let start = resume.requestHeaders["range"].flatMap { Int64($0.dropFirst(6).dropLast()) }
            // From the bytes kept: some arrived, no more than the server sent.
            #expect(start.map { $0 > 0 && $0 <= Int64(slow.bodyBytesSent) } == true, "\(resume.requestHeaders)")
            #expect(resume.requestHeaders["if-range"] == slow.responseHeaders["etag"])
            #expect(resume.status == 206 && resume.faultsApplied == false)
        }
    }

    @Test("-x 2: a slow segment is aborted and its rest taken by the connection waiting for work")
    func slowSegment() async throws {
        // A window of its own, not stretched by the time scale: the slow piece (at least 256 KiB at 32 KiB/s, 8 s)
        // must outlast it, and under ThreadSanitizer (scale 10) a 10 s window let the piece finish unaborted. Full-speed
        // requests stay far above 256 KiB/s even instrumented.
        try await withEngine(configuration(connections: 2, window: .seconds(2), scalesWindow: false)) {
            server, engine, dir in
            // Request 1 is the first segment (the probe, full speed), request 2 the first of the other connection's
            // pieces, paced slow; every later one is at full speed.
            let path = "/bytes/4M?seed=3202&" + Self.slowSecond
            let id = try await engine.add(.init(url: server.baseURL + path, destination: dir + "/x2"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(path: dir + "/x2", sha256: expectedSHA256(size: 4 << 20, seed: 3202), bytes: 4 << 20))
            let gets = await settledRequests(server, path).sorted { $0.arrival < $1.arrival }
            guard let slow = gets.first(where: { $0.faultsApplied == true }),
                let range = slow.requestHeaders["range"].flatMap(Self.bounds)
            else {
                Issue.record("no slow segment request among \(gets.map { $0.requestHeaders["range"] ?? "-" })")
                return
            }
            #expect(slow.outcome == .clientClosed)
            #expect(slow.requestHeaders["if-range"] == gets[0].responseHeaders["etag"])
            // The rest of the slow segment was asked for again, from where it stood, with the same If-Range.
            let rest = gets.filter { $0.arrival > slow.arrival }.first {
                guard let other = $0.requestHeaders["range"].flatMap(Self.bounds) else { return false }
                return other.lowerBound > range.lowerBound
                    && other.lowerBound <= range.lowerBound + Int64(slow.bodyBytesSent)
                    && other.upperBound == range.upperBound
            }
            #expect(rest != nil, "\(gets.map { ($0.requestHeaders["range"] ?? "-", $0.outcome) })")
            #expect(rest?.requestHeaders["if-range"] == slow.requestHeaders["if-range"])
            #expect(rest?.status == 206)
        }
    }

    @Test("past the slow-abort limit the download fails with too-slow")
    func exhausted() async throws {
        try await withEngine(configuration(maximumAborts: 1, window: .milliseconds(500))) { server, engine, dir in
            let path = "/bytes/1M?seed=3203&rate=16K"
            let id = try await engine.add(.init(url: server.baseURL + path, destination: dir + "/never"))
            let result = await engine.result(of: id)
            guard case .failed(let error) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(DownloadError.tooSlow ~= error)
            #expect(error.kind == "too-slow")
            #expect(!error.isRetryable)
            #expect(error.message.contains("2 attempts") && error.message.contains("256K/s"), "\(error.message)")
            // Two attempts: the first aborted and resumed, the second aborted past the limit.
            #expect(await settledRequests(server, path).count == 2)
        }
    }

    @Test(
        "an unusable low-speed limit is refused when the engine is created",
        arguments: [
            DownloadConfiguration.LowSpeedLimit(bytesPerSecond: 0, duration: .seconds(1)),
            .init(bytesPerSecond: 1024, duration: .zero),
            .init(bytesPerSecond: 1024, duration: .seconds(1), maximumAborts: -1),
        ])
    func unusableLimits(limit: DownloadConfiguration.LowSpeedLimit) {
        #expect(throws: DownloadError.self) {
            _ = try DownloadEngine(
                stateDirectory: makeTemporaryDirectory() + "/.rangefetch",
                configuration: testConfiguration { $0.lowSpeed = limit })
        }
    }

    @Test("rangefetch --speed-limit/--speed-time: a slow first attempt is resumed and the download completes")
    func cliResumes() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let path = "/bytes/1M?seed=3204&" + Self.slowFirst
            // The window stretched by the time scale, as in `configuration`: the slow first response (32 s of body)
            // outlasts it whatever the scale, and a resume a loaded machine starves for a moment is not taken for a
            // slow one, which would add a request to the two counted below.
            let window = "\(scaled(seconds: 1) as Int)s"
            let child = try await Child.start(
                [server.baseURL + path, "-o", dir + "/f", "--speed-limit", "256K", "--speed-time", window, "--json"],
                logs: dir + "/f")
            #expect(try await child.wait() == 0)
            #expect(try sha256(ofFile: dir + "/f") == expectedSHA256(size: 1 << 20, seed: 3204))
            #expect(child.output.contains("\"kind\":\"slow-transfer\""))
            let gets = await settledRequests(server, path).sorted { $0.arrival < $1.arrival }
            #expect(gets.count == 2)
            #expect(gets.last?.requestHeaders["range"]?.hasPrefix("bytes=") == true)
            #expect(gets.last?.requestHeaders["if-range"] == gets.first?.responseHeaders["etag"])
        }
    }

    @Test("rangefetch: past --slow-retries, one line on stderr and exit 4, as other transport failures")
    func cliExhausted() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let child = try await Child.start(
                [
                    server.baseURL + "/bytes/1M?seed=3205&rate=16K", "-o", dir + "/s", "--speed-limit", "256K",
                    "--speed-time", "500ms", "--slow-retries", "0",
                ], logs: dir + "/s")
            #expect(try await child.wait() == 4)
            let lines = child.errors.split(separator: "\n")
            #expect(lines.count == 1, "\(child.errors)")
            #expect(lines.first?.contains("too slow: 1 attempt was slower than 256K/s for 0.5s") == true)
        }
    }

    @Test(
        "bad --speed-limit, --speed-time or --slow-retries: one line on stderr, exit 64",
        arguments: [
            ["--speed-limit", "0"], ["--speed-limit", "slow"], ["--speed-time", "0"], ["--speed-time", "soon"],
            ["--slow-retries=-1", "--speed-limit", "1K"],
        ])
    func cliBadValues(arguments: [String]) async throws {
        let dir = makeTemporaryDirectory()
        let child = try await Child.start(["http://127.0.0.1:1/x", "-o", dir + "/x"] + arguments, logs: dir + "/bad")
        #expect(try await child.wait() == 64)
        #expect(child.errors.split(separator: "\n").count == 1, "\(child.errors)")
        #expect(child.errors.contains(String(arguments[0].prefix { $0 != "=" })))
    }

    /// `START..<END+1` of a `bytes=START-END` range.
    static func bounds(_ range: String) -> Range<Int64>? {
        let parts = range.dropFirst(6).split(separator: "-")
        guard range.hasPrefix("bytes="), parts.count == 2, let start = Int64(parts[0]), let end = Int64(parts[1])
        else { return nil }
        return start..<end + 1
    }
}
