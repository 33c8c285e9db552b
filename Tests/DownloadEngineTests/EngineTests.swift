import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// Behaviours 1–9 against the in-process rangeserver; the journal is the witness.
@Suite("Engine against rangeserver")
struct EngineTests {
    // MARK: 1. Tasks

    @Test("1. add, start, pause, resume, cancel, remove; stable id; ordered events")
    func taskLifecycle() async throws {
        try await withEngine { server, engine, dir in
            let log = EventLog(engine.events())
            let url = server.baseURL + stalledOnce("/bytes/1M?seed=11", after: 200 << 10)
            let id = try await engine.add(.init(url: url, destination: dir + "/a.bin"), start: false)
            #expect(id.rawValue != url)
            #expect(await engine.snapshot(id)?.state == .idle)
            try await engine.start(id)
            try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) > 100_000 }
            try await engine.pause(id)
            // The stopped response is journalled once the server sees the close; wait, so the order is fixed.
            try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
            #expect(await engine.snapshot(id)?.state == .paused)
            let paused = try #require(fileSize(dir + "/.rangefetch/\(id).part"))
            #expect(paused > 0)
            try await engine.resume(id)
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(path: dir + "/a.bin", sha256: expectedSHA256(size: 1 << 20, seed: 11), bytes: 1 << 20)
            )
            try await eventually(.seconds(5), "completed event") { log.kinds(id).last == "completed" }
            let kinds = log.kinds(id)
            #expect(Array(kinds.prefix(3)) == ["added", "waiting", "running"])
            #expect(kinds.contains("paused"))
            #expect(Array(kinds.suffix(2)) == ["completed-event", "completed"])
            // Re-adding the same URL and destination finds the same task.
            #expect(try await engine.add(.init(url: url, destination: dir + "/a.bin")) == id)

            let gets = try await journalledGets(server, "/bytes/1M?seed=11")
            #expect(gets.count == 2)
            #expect(gets[1].requestHeaders["range"] == "bytes=\(paused)-")

            // Cancel deletes the partial file; remove deletes the record.
            let other = try await engine.add(
                .init(
                    url: server.baseURL + stalledOnce("/bytes/1M?seed=12", after: 100 << 10),
                    destination: dir + "/b.bin"))
            try await eventually { (await engine.snapshot(other)?.progress.bytes ?? 0) > 10_000 }
            try await engine.cancel(other)
            #expect(await engine.snapshot(other)?.state == .cancelled)
            #expect(!FileManager.default.fileExists(atPath: dir + "/.rangefetch/\(other).part"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/b.bin"))
            try await engine.remove(other)
            #expect(await engine.snapshot(other) == nil)
            #expect(!FileManager.default.fileExists(atPath: dir + "/.rangefetch/\(other).json"))
            // Events reach the log on their own task: wait for the cancel's, as for the completion above.
            try await eventually(.seconds(5), "cancelled state event") { log.states(other).last == .cancelled }
        }
    }

    // MARK: 2. Persistence

    @Test("2. restart resumes from the partial file's actual length, even after a move")
    func persistenceUsesActualLength() async throws {
        let dir = makeTemporaryDirectory()
        try await withRangeServer(fixturesServerConfiguration) { server in
            let url = server.baseURL + "/bytes/1M?seed=21&rate=\(paced(256))"
            let first = try DownloadEngine(stateDirectory: dir + "/out/.rangefetch", configuration: testConfiguration())
            let id = try await first.add(.init(url: url, destination: dir + "/out/f.bin"))
            try await eventually { (await first.snapshot(id)?.progress.bytes ?? 0) > 200_000 }
            await first.shutdown()
            // The stopped response is journalled once the server sees the close; wait, so the order is fixed.
            try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
            let record = try String(contentsOfFile: dir + "/out/.rangefetch/\(id).json", encoding: .utf8)
            #expect(record.contains("\"destination\" : \"../f.bin\""))
            #expect(!record.contains(dir))

            // Simulate a crash that lost the tail: the file is shorter than anything recorded.
            let part = dir + "/out/.rangefetch/\(id).part"
            let handle = try #require(FileHandle(forWritingAtPath: part))
            try handle.truncate(atOffset: 100_000)
            try handle.close()
            try FileManager.default.moveItem(atPath: dir + "/out", toPath: dir + "/moved")

            let second = try DownloadEngine(
                stateDirectory: dir + "/moved/.rangefetch", configuration: testConfiguration())
            #expect(await second.snapshot(id)?.state == .paused)
            #expect(await second.snapshot(id)?.destination == dir + "/moved/f.bin")
            try await second.resume(id)
            let result = await second.result(of: id)
            await second.shutdown()
            #expect(
                result
                    == .completed(
                        path: dir + "/moved/f.bin", sha256: expectedSHA256(size: 1 << 20, seed: 21), bytes: 1 << 20))
            let gets = await settledRequests(server, "/bytes/1M?seed=21")
            #expect(gets.last?.requestHeaders["range"] == "bytes=100000-")
        }
    }

    // MARK: 3. Resume rules

    /// Downloads part of `url`, pauses, optionally edits the record, resumes, and returns the journal's GETs.
    func pauseAndResume(
        _ server: RangeServer, _ engine: DownloadEngine, _ dir: String, path: String, size: Int, seed: UInt64,
        edit: ((inout TaskRecord) -> Void)? = nil
    ) async throws -> (gets: [JournalEntry], pausedAt: Int64, result: DownloadResult) {
        // Every response stalls 5 s after 200 KiB (stretched by the time scale, and always half the idle timeout), so
        // the pause lands mid-body however late this task wakes: a paced body alone ended before the pause once on a
        // loaded CI machine ("task ... is completed"). The resumed response stalls too, which costs each test those
        // 5 s.
        let url = server.baseURL + path + "&stall-after=200K&stall-for=\(scaled(seconds: 5) as Int)s"
        let id = try await engine.add(.init(url: url, destination: dir + "/\(seed).bin"))
        try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) > 100_000 }
        try await engine.pause(id)
        // The stopped response is journalled once the server sees the close; wait, so the order is fixed.
        try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
        let part = dir + "/.rangefetch/\(id).part"
        let pausedAt = fileSize(part) ?? 0
        if let edit {
            let store = try StateStore(directory: dir + "/.rangefetch")
            let data = try Data(contentsOf: URL(fileURLWithPath: store.recordPath(id)))
            var record = try StateStore.decode(data)
            edit(&record)
            try store.save(record)
            await engine.shutdown()
            let again = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration())
            try await again.resume(id)
            let result = await again.result(of: id)
            await again.shutdown()
            return (try await journalledGets(server), pausedAt, result)
        }
        try await engine.resume(id)
        let result = await engine.result(of: id)
        return (try await journalledGets(server), pausedAt, result)
    }

    /// The journal's GETs for `prefix`, once the server has answered every request it has read (`Journal.settled`):
    /// a response is journalled when the server finishes it, which can be just after the client has every byte.
    /// `count` is what the caller expects at least; the test's expectations check it.
    ///
    /// In the order the requests arrived: a response held still (`stalledOnce`) learns of its client's close only
    /// later, and was once journalled after the resume that followed it.
    func journalledGets(
        _ server: RangeServer, _ prefix: String = "/bytes/", atLeast count: Int = 2
    ) async throws
        -> [JournalEntry]
    {
        _ = await server.journal.settled(timeout: scaled(.seconds(10)))
        return requests(server, prefix).sorted { $0.arrival < $1.arrival }
    }

    @Test("3a. resume sends Range and If-Range with the strong ETag and Accept-Encoding: identity")
    func resumeWithStrongETag() async throws {
        try await withEngine { server, engine, dir in
            let (gets, pausedAt, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=31&rate=\(paced(256))", size: 1 << 20, seed: 31)
            #expect(gets.count == 2)
            #expect(gets.allSatisfy { $0.requestHeaders["accept-encoding"] == "identity" })
            #expect(gets[0].requestHeaders["range"] == nil)
            #expect(gets[1].requestHeaders["range"] == "bytes=\(pausedAt)-")
            #expect(gets[1].requestHeaders["if-range"] == gets[0].responseHeaders["etag"])
            #expect(gets[1].status == 206)
            #expect(
                result
                    == .completed(
                        path: dir + "/31.bin", sha256: expectedSHA256(size: 1 << 20, seed: 31), bytes: 1 << 20))
        }
    }

    @Test("3b. a weak ETag is never used: If-Range carries Last-Modified")
    func resumeWithLastModifiedWhenETagIsWeak() async throws {
        try await withEngine { server, engine, dir in
            let (gets, _, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=32&rate=\(paced(256))&weak-etag=1", size: 1 << 20, seed: 32)
            #expect(gets[0].responseHeaders["etag"]?.hasPrefix("W/") == true)
            #expect(gets[1].requestHeaders["if-range"] == gets[0].responseHeaders["last-modified"])
            #expect(gets[1].status == 206)
            #expect(
                result
                    == .completed(
                        path: dir + "/32.bin", sha256: expectedSHA256(size: 1 << 20, seed: 32), bytes: 1 << 20))
        }
    }

    @Test("3c. no validator at all: restart from zero without Range")
    func noValidatorRestarts() async throws {
        try await withEngine { server, engine, dir in
            let (gets, _, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=33&rate=\(paced(256))&no-etag=1&no-last-modified=1",
                size: 1 << 20,
                seed: 33)
            #expect(gets.count == 2)
            #expect(gets[1].requestHeaders["range"] == nil)
            #expect(gets[1].status == 200)
            #expect(
                result
                    == .completed(
                        path: dir + "/33.bin", sha256: expectedSHA256(size: 1 << 20, seed: 33), bytes: 1 << 20))
        }
    }

    @Test("3d. 200 to a range request: the body is kept and written from zero")
    func fullResponseToRangeRequest() async throws {
        try await withEngine { server, engine, dir in
            let (gets, _, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=34&rate=\(paced(512))&ignore-range=1", size: 1 << 20,
                seed: 34)
            #expect(gets.count == 2)
            #expect(gets[1].requestHeaders["range"] != nil)
            #expect(gets[1].status == 200)
            #expect(gets[1].bodyBytesSent == 1 << 20)
            #expect(
                result
                    == .completed(
                        path: dir + "/34.bin", sha256: expectedSHA256(size: 1 << 20, seed: 34), bytes: 1 << 20))
        }
    }

    @Test("3e. a truthful earlier Content-Range start: the overlap is skipped")
    func earlierStartSkipsOverlap() async throws {
        try await withEngine { server, engine, dir in
            let (gets, pausedAt, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=35&rate=\(paced(256))&misalign-range=1000", size: 1 << 20,
                seed: 35)
            #expect(gets.count == 2)
            #expect(gets[1].status == 206)
            let contentRange = try #require(gets[1].responseHeaders["content-range"])
            #expect(contentRange.hasPrefix("bytes \(pausedAt - 1000)-"))
            #expect(
                result
                    == .completed(
                        path: dir + "/35.bin", sha256: expectedSHA256(size: 1 << 20, seed: 35), bytes: 1 << 20))
        }
    }

    @Test("3f. a changed ETag on resume: the 200 restarts the file")
    func changedValidatorRestarts() async throws {
        try await withEngine { server, engine, dir in
            let (gets, _, result) = try await pauseAndResume(
                server, engine, dir, path: "/bytes/1M?seed=36&rate=\(paced(256))", size: 1 << 20, seed: 36
            ) { record in record.etag = "\"something-else\"" }
            #expect(gets.count == 2)
            #expect(gets[1].requestHeaders["if-range"] == "\"something-else\"")
            #expect(gets[1].status == 200)
            #expect(
                result
                    == .completed(
                        path: dir + "/36.bin", sha256: expectedSHA256(size: 1 << 20, seed: 36), bytes: 1 << 20))
        }
    }

    @Test("3g. 416 with a complete partial file: verify and finish without a body")
    func unsatisfiableFinishes() async throws {
        try await withEngine { server, engine, dir in
            let size = 1 << 20
            let url = server.baseURL + "/bytes/1M?seed=37&rate=\(paced(256))"
            let id = try await engine.add(.init(url: url, destination: dir + "/37.bin"))
            try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) > 100_000 }
            try await engine.pause(id)
            // The stopped response is journalled once the server sees the close; wait, so the order is fixed.
            try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
            // Complete the partial file by hand, as if the crash came after the last write.
            let part = dir + "/.rangefetch/\(id).part"
            let have = Int(fileSize(part) ?? 0)
            let rest = ContentGenerator(seed: 37, version: 1).bytes(offset: UInt64(have), count: size - have)
            let handle = try #require(FileHandle(forWritingAtPath: part))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(rest))
            try handle.close()
            try await engine.resume(id)
            let result = await engine.result(of: id)
            let gets = await settledRequests(server, "/bytes/1M?seed=37")
            #expect(gets.last?.status == 416)
            #expect(gets.last?.requestHeaders["range"] == "bytes=\(size)-")
            #expect(
                result
                    == .completed(
                        path: dir + "/37.bin", sha256: expectedSHA256(size: size, seed: 37), bytes: Int64(size)))
        }
    }

    // MARK: 4. Retries

    /// The rule, not a count (``expectRetriedFromOffset(_:log:id:size:cut:everyByteArrives:_:sourceLocation:)``):
    /// each resume asks from where the previous response ended as the client held it, and every request after the
    /// first follows a `retrying` event for an error the retry policy retries.
    @Test("4a. dropped and reset connections are retried from the current offset")
    func retriesFromOffset() async throws {
        try await withEngine { server, engine, dir in
            let log = EventLog(engine.events())
            for (seed, fault) in [(41, "drop-after=300K"), (42, "reset-after=300K")] {
                let id = try await engine.add(
                    .init(url: server.baseURL + "/bytes/1M?seed=\(seed)&\(fault)", destination: dir + "/\(seed).bin"))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/\(seed).bin", sha256: expectedSHA256(size: 1 << 20, seed: UInt64(seed)),
                            bytes: 1 << 20))
                let gets = try await journalledGets(server, "/bytes/1M?seed=\(seed)&", atLeast: 4)
                try await expectRetriedFromOffset(
                    gets, log: log, id: id, size: 1 << 20, cut: 300 << 10, everyByteArrives: fault.hasPrefix("drop"),
                    "4a \(fault)")
                #expect(log.states(id).contains(.retrying))
            }
        }
    }

    @Test("4b. 503 with Retry-After is honoured, then the budget runs out; 404 fails at once")
    func retryAfterAndPermanentFailures() async throws {
        try await withEngine(testConfiguration { $0.retry.maximumRetries = 1 }) { server, engine, dir in
            let started = ContinuousClock.now
            let busy = try await engine.add(
                .init(url: server.baseURL + "/bytes/1K?seed=43&status=503&retry-after=1", destination: dir + "/b"))
            let busyResult = await engine.result(of: busy)
            #expect(ContinuousClock.now - started >= .milliseconds(900))
            guard case .failed(let error) = busyResult else {
                Issue.record("expected failure, got \(busyResult)")
                return
            }
            #expect(DownloadError.retriesExhausted ~= error)
            // A response is journalled when the server finishes it, which can be just after the client has it all.
            #expect(await settledRequests(server, "/bytes/1K?seed=43").count == 2)

            let missing = try await engine.add(
                .init(url: server.baseURL + "/files/does-not-exist", destination: dir + "/m"))
            let missingResult = await engine.result(of: missing)
            #expect(missingResult == .failed(.permanentHTTPStatus(404, url: server.baseURL + "/files/does-not-exist")))
            #expect(await settledRequests(server, "/files/does-not-exist").count == 1)
        }
    }

    // MARK: 5. Timeouts

    /// Downloads `url(server, blackholePort)` with a connect timeout (0.3 s unless given) and two retries, against a
    /// server with a blackhole listener; returns the result, the time it took and the server.
    private func downloadWithDeadEdge(
        connectTimeout: Duration = .milliseconds(300), _ url: (RangeServer, Int) -> String
    ) async throws -> (result: DownloadResult, elapsed: Duration, server: RangeServer, dir: String) {
        var configuration = fixturesServerConfiguration
        configuration.blackholePort = 0
        return try await withRangeServer(configuration) { server in
            let port = try #require(server.blackholePort)
            let dir = makeTemporaryDirectory()
            let engine = try DownloadEngine(
                stateDirectory: dir + "/.rangefetch",
                configuration: testConfiguration {
                    $0.timeouts.connect = connectTimeout
                    $0.retry.maximumRetries = 2
                })
            let started = ContinuousClock.now
            let id = try await engine.add(.init(url: url(server, port), destination: dir + "/out"))
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            await engine.shutdown()
            return (result, elapsed, server, dir)
        }
    }

    @Test("5c. a connect that never completes (the server's blackhole listener) ends in the connect timeout, retried")
    func connectTimeout() async throws {
        let run = try await downloadWithDeadEdge { _, port in "http://127.0.0.1:\(port)/bytes/1K" }
        guard case .failed(let error) = run.result else {
            Issue.record("expected failure, got \(run.result)")
            return
        }
        #expect(DownloadError.retriesExhausted ~= error)
        #expect(error.message.contains("gave up after 2 retries"), "\(error.message)")
        #expect(error.message.contains("connect timeout"), "\(error.message)")
        // Three connects of 0.3 s and two short delays; far from the minutes a connect without a timeout takes
        // (Linux gives up on a SYN after about 127 s). The lower bound leaves room for a timer that fires early under
        // load (one run of the whole suite took 0.73 s); the upper one for timers that fire late (a loaded
        // clean-clone CI run took 11.2 s).
        #expect(run.elapsed >= .milliseconds(600))
        #expect(run.elapsed < scaled(.seconds(40)))
        #expect(!FileManager.default.fileExists(atPath: run.dir + "/out"))
    }

    @Test("5d. a redirect target that cannot be connected to sends the retry back to the original URL")
    func deadEdgeReresolves() async throws {
        // The original URL always redirects to the dead edge: every retry asks the original again (three GETs of it),
        // and the task runs out of retries instead of retrying the dead edge alone. The timeout also bounds the
        // connects to the origin, so it is stretched: an origin connect that a loaded machine let pass 0.3 s would
        // spend a retry without a GET. The blackhole never connects, however long the wait.
        let run = try await downloadWithDeadEdge(connectTimeout: scaled(.milliseconds(300))) { server, port in
            let dead = "http://127.0.0.1:\(port)/bytes/64K"
            return server.baseURL + "/redirect-to?url="
                + dead.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        }
        guard case .failed(let error) = run.result else {
            Issue.record("expected failure, got \(run.result)")
            return
        }
        #expect(DownloadError.retriesExhausted ~= error)
        #expect(await settledRequests(run.server, "/redirect-to").count == 3)
    }

    @Test("5. idle timeout aborts a stalled body and retries from the offset; overall deadline fails")
    func idleTimeoutAndDeadline() async throws {
        // The first two responses stall after their first 100K for an hour (fault-seed 6 draws yes, yes, then no),
        // so only an idle timeout ends the first stall, and the resume from byte 102400 is asked for even when a
        // loaded machine let the timeout pass before the first byte once (the first stall is then the second
        // response's, from zero). It was a 400 ms timeout against a 2 s stall, which loaded full runs failed: the
        // stall ended before the timeout fired.
        let configuration = testConfiguration { $0.timeouts.idle = scaled(.seconds(1)) }
        try await withEngine(configuration) { server, engine, dir in
            let log = EventLog(engine.events())
            let id = try await engine.add(
                .init(
                    url: server.baseURL + "/bytes/512K?seed=51&stall-after=100K&probability=0.5&fault-seed=6",
                    destination: dir + "/s"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(path: dir + "/s", sha256: expectedSHA256(size: 512 << 10, seed: 51), bytes: 512 << 10)
            )
            #expect(
                log.all.contains { if case .retrying(id, _, _, DownloadError.idleTimeout) = $0 { true } else { false } }
            )
            // A stalled response is journalled when its connection ends, which the journal's settling waits for.
            let gets = await settledRequests(server, "/bytes/512K?seed=51").sorted {
                $0.requestHeaders["range"] ?? "" < $1.requestHeaders["range"] ?? ""
            }
            #expect(
                gets.contains { $0.requestHeaders["range"] == "bytes=102400-" },
                "\(gets.map { ($0.requestHeaders["range"] ?? "-", $0.bodyBytesSent, $0.outcome) })")
        }
        let deadline = testConfiguration { $0.timeouts.overall = .milliseconds(500) }
        try await withEngine(deadline) { server, engine, dir in
            let id = try await engine.add(
                .init(url: server.baseURL + "/bytes/1M?seed=52&rate=\(paced(100))", destination: dir + "/d"))
            let result = await engine.result(of: id)
            guard case .failed(let error) = result else {
                Issue.record("expected a deadline failure, got \(result)")
                return
            }
            #expect(DownloadError.deadlineExceeded ~= error)
            #expect(!FileManager.default.fileExists(atPath: dir + "/d"))
        }
    }

    // MARK: 6. Redirects

    @Test("6a. redirects are followed by the engine and recorded; a loop ends with a clear error")
    func redirects() async throws {
        try await withEngine { server, engine, dir in
            let log = EventLog(engine.events())
            let url = server.baseURL + "/redirect/3/bytes/64K?seed=61&redirect-code=303"
            let id = try await engine.add(.init(url: url, destination: dir + "/r"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(path: dir + "/r", sha256: expectedSHA256(size: 64 << 10, seed: 61), bytes: 64 << 10))
            let snapshot = try #require(await engine.snapshot(id))
            #expect(snapshot.url == url)
            #expect(snapshot.redirects.count == 3)
            #expect(snapshot.redirects.allSatisfy { $0.status == 303 })
            #expect(snapshot.resolvedURL == server.baseURL + "/bytes/64K?seed=61")
            #expect(log.kinds(id).filter { $0 == "redirect" }.count == 3)
            #expect(await settledRequests(server, "/redirect/").allSatisfy { $0.method == "GET" })

            let loop = try await engine.add(.init(url: server.baseURL + "/redirect-loop", destination: dir + "/loop"))
            let loopResult = await engine.result(of: loop)
            guard case .failed(let error) = loopResult else {
                Issue.record("expected failure, got \(loopResult)")
                return
            }
            #expect(DownloadError.tooManyRedirects ~= error)
            #expect(await settledRequests(server, "/redirect-loop").count == 21)
        }
    }

    @Test("6b. a resume goes to the resolved URL; on 404 there it re-resolves from the original and resumes")
    func reresolveOnGoneResolvedURL() async throws {
        try await withEngine { server, engine, dir in
            // The first response stalls after 200 KiB, so the pause lands mid-body however late this task wakes.
            let path = stalledOnce("/redirect/1/bytes/1M?seed=62", after: 200 << 10)
            let url = server.baseURL + path
            let id = try await engine.add(.init(url: url, destination: dir + "/62.bin"))
            try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) >= 200 << 10 }
            try await engine.pause(id)
            // The stopped response is journalled once the server sees the close; wait, so the order is fixed.
            try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
            let pausedAt = fileSize(dir + "/.rangefetch/\(id).part") ?? 0
            let store = try StateStore(directory: dir + "/.rangefetch")
            var record = try StateStore.decode(Data(contentsOf: URL(fileURLWithPath: store.recordPath(id))))
            record.resolvedURL = server.baseURL + "/files/moved-away"
            try store.save(record)
            await engine.shutdown()
            let again = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration())
            try await again.resume(id)
            let result = await again.result(of: id)
            await again.shutdown()
            #expect(
                result
                    == .completed(
                        path: dir + "/62.bin", sha256: expectedSHA256(size: 1 << 20, seed: 62), bytes: 1 << 20))
            _ = await server.journal.settled(timeout: scaled(.seconds(10)))
            // In the order the requests arrived: a stopped response is journaled when the server sees its close,
            // which a slowed run (one CI run) saw after the requests of the resume.
            let targets = server.journal.entries().sorted { $0.arrival < $1.arrival }.map(\.target)
            let gone = try #require(targets.firstIndex(of: "/files/moved-away"))
            #expect(targets[(gone + 1)...].first == path)
            let last = try #require(await settledRequests(server, "/bytes/1M?seed=62").last)
            #expect(last.requestHeaders["range"] == "bytes=\(pausedAt)-")
            #expect(last.requestHeaders["if-range"] != nil)
        }
    }

    // MARK: 7. Concurrency and groups

    @Test("7. at most `concurrency` transfers, FIFO start order, groups with one completion")
    func concurrencyAndGroups() async throws {
        try await withEngine(testConfiguration { $0.concurrency = 2 }) { server, engine, dir in
            let log = EventLog(engine.events())
            let requests = (0..<5).map {
                DownloadRequest(
                    url: server.baseURL + "/bytes/256K?seed=7\($0)&rate=\(paced(512))", destination: dir + "/g\($0)")
            }
            let group = try await engine.addGroup(requests)
            let results = await engine.results(of: group)
            #expect(results.count == 5)
            for (index, member) in group.members.enumerated() {
                #expect(
                    results[member]
                        == .completed(
                            path: dir + "/g\(index)", sha256: expectedSHA256(size: 256 << 10, seed: UInt64(70 + index)),
                            bytes: 256 << 10))
            }
            var running = Set<DownloadTaskID>()
            var peak = 0
            var startOrder: [DownloadTaskID] = []
            for event in log.all {
                guard case .stateChanged(let id, let state) = event else { continue }
                if state == .running, !startOrder.contains(id) { startOrder.append(id) }
                if state == .running || state == .retrying { running.insert(id) } else { running.remove(id) }
                peak = max(peak, running.count)
            }
            #expect(peak == 2)
            #expect(startOrder == group.members)
            let aggregate = await engine.progress(of: group)
            #expect(aggregate.bytes == 5 * 262_144)
            #expect(aggregate.total == Int64(5 * 262_144))
            try await eventually {
                log.all.contains { if case .groupFinished(group.id, _) = $0 { true } else { false } }
            }
        }
    }

    // MARK: 8. Completion

    @Test("8. a wrong SHA-256 fails verification and never reaches the destination; no silent overwrite")
    func verification() async throws {
        try await withEngine { server, engine, dir in
            let url = server.baseURL + "/bytes/64K?seed=81"
            let wrong = String(repeating: "0", count: 64)
            let id = try await engine.add(.init(url: url, destination: dir + "/v", sha256: wrong))
            let result = await engine.result(of: id)
            guard case .failed(let error) = result else {
                Issue.record("expected failure, got \(result)")
                return
            }
            #expect(DownloadError.verificationFailed ~= error)
            #expect(!FileManager.default.fileExists(atPath: dir + "/v"))
            #expect((fileSize(dir + "/.rangefetch/\(id).part") ?? 0) == 0)

            // The right digest succeeds; the Repr-Digest the server sent is checked too.
            let good = try await engine.add(
                .init(url: url, destination: dir + "/v", sha256: expectedSHA256(size: 64 << 10, seed: 81)))
            #expect(good == id)
            guard case .completed = await engine.result(of: good) else {
                Issue.record("expected completion")
                return
            }
            #expect(
                await settledRequests(server, "/bytes/64K?seed=81").allSatisfy {
                    $0.requestHeaders["want-repr-digest"] != nil
                })

            try Data("keep me".utf8).write(to: URL(fileURLWithPath: dir + "/existing"))
            let blocked = try await engine.add(.init(url: url, destination: dir + "/existing"))
            let blockedResult = await engine.result(of: blocked)
            guard case .failed(let blockedError) = blockedResult else {
                Issue.record("expected failure, got \(blockedResult)")
                return
            }
            #expect(DownloadError.destinationExists ~= blockedError)
            #expect(try String(contentsOfFile: dir + "/existing", encoding: .utf8) == "keep me")
            let forced = try await engine.add(.init(url: url, destination: dir + "/existing", overwrite: true))
            guard case .completed = await engine.result(of: forced) else {
                Issue.record("expected completion with overwrite")
                return
            }
            #expect(try sha256(ofFile: dir + "/existing") == expectedSHA256(size: 64 << 10, seed: 81))
        }
    }

    @Test("8b. bytes that disagree with the server's Repr-Digest are fetched again from zero, three times at most")
    func digestMismatchRestarts() async throws {
        try await withEngine { server, engine, dir in
            // Every response replaces the bytes after 1K: each fetch fails the digest, so the task restarts three
            // times and then fails, with nothing at the destination.
            let url = server.baseURL + "/bytes/64K?seed=82&garbage-after=1K"
            let id = try await engine.add(.init(url: url, destination: dir + "/g"))
            let result = await engine.result(of: id)
            guard case .failed(let error) = result else {
                Issue.record("expected failure, got \(result)")
                return
            }
            #expect(DownloadError.verificationFailed ~= error)
            #expect(error.message.contains("restarted from zero 3 times"), "\(error.message)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/g"))
            let fetches = await settledRequests(server, "/bytes/64K?seed=82&garbage-after=1K")
            #expect(fetches.count == 4)
            #expect(fetches.allSatisfy { $0.requestHeaders["range"] == nil }, "every fetch starts from zero")
        }
    }

    // MARK: 9. Bad input

    @Test("9. bad input fails that task alone; a corrupt record is set aside")
    func badInput() async throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/.rangefetch", withIntermediateDirectories: true)
        try Data("{\"format\":".utf8).write(to: URL(fileURLWithPath: dir + "/.rangefetch/broken.json"))
        try await withEngine(directory: dir) { server, engine, dir in
            #expect(engine.loadProblems.count == 1)
            #expect(engine.loadProblems.allSatisfy { DownloadError.corruptRecord ~= $0 })
            let aside = try FileManager.default.contentsOfDirectory(atPath: dir + "/.rangefetch")
            #expect(aside.contains { $0.hasPrefix("broken.json.corrupt-") })

            await #expect { try await engine.add(.init(url: "http://[::1", destination: dir + "/x")) } throws: {
                DownloadError.invalidURL ~= $0
            }
            await #expect { try await engine.add(.init(url: "ftp://example.com/x", destination: dir + "/x")) } throws: {
                DownloadError.unsupportedScheme ~= $0
            }
            await #expect {
                try await engine.add(.init(url: server.baseURL + "/bytes/1K", destination: "/proc/forbidden/x"))
            } throws: {
                DownloadError.fileSystem ~= $0
            }
            let fine = try await engine.add(.init(url: server.baseURL + "/bytes/1K?seed=91", destination: dir + "/ok"))
            #expect(
                await engine.result(of: fine)
                    == .completed(path: dir + "/ok", sha256: expectedSHA256(size: 1024, seed: 91), bytes: 1024))
        }
    }

    @Test("10. records: none before a response head, one per state that matters; power-loss durability works")
    func recordSavesAndDurability() async throws {
        try await withEngine { server, engine, dir in
            // Added but never started: nothing worth a record yet.
            let idle = try await engine.add(
                .init(url: server.baseURL + "/bytes/1K?seed=101", destination: dir + "/i"), start: false)
            #expect(!FileManager.default.fileExists(atPath: dir + "/.rangefetch/\(idle).json"))
            // A body past the unrecorded limit: its record is saved before the partial file holds more than 256 KiB,
            // and completed before the rename.
            let id = try await engine.add(
                .init(url: server.baseURL + "/bytes/1M?seed=102&rate=\(paced(512))", destination: dir + "/c"))
            #expect(
                await engine.result(of: id)
                    == .completed(path: dir + "/c", sha256: expectedSHA256(size: 1 << 20, seed: 102), bytes: 1 << 20))
            let record = try StateStore.decode(Data(contentsOf: URL(fileURLWithPath: dir + "/.rangefetch/\(id).json")))
            #expect(record.state == .completed)
            #expect(record.totalLength == 1 << 20)
            // A body of at most 256 KiB (paced, so it arrives in pieces) is verified and renamed into place without
            // a record file: its completed record is a line of the task log.
            let smallURL = server.baseURL + "/bytes/256K?seed=104&rate=\(paced(2048))"
            let small = try await engine.add(.init(url: smallURL, destination: dir + "/s"))
            #expect(
                await engine.result(of: small)
                    == .completed(
                        path: dir + "/s", sha256: expectedSHA256(size: 256 << 10, seed: 104), bytes: 256 << 10))
            let names = try FileManager.default.contentsOfDirectory(atPath: dir + "/.rangefetch")
            #expect(Set(names) == ["\(id).json", StateStore.taskLogName, StateDirectoryLock.fileName])
            // In this engine the task stays completed: adding it again fetches nothing.
            #expect(try await engine.add(.init(url: smallURL, destination: dir + "/s")) == small)
            #expect(await engine.snapshot(small)?.state == .completed)
            #expect(await settledRequests(server, "/bytes/256K?seed=104").count == 1)
            // Nor does a later engine on the same state directory (a rerun of the same command), once this one has
            // let the directory go.
            await engine.shutdown()
            let rerun = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration())
            #expect(rerun.loadProblems.isEmpty)
            #expect(try await rerun.add(.init(url: smallURL, destination: dir + "/s")) == small)
            #expect(
                await rerun.result(of: small)
                    == .completed(
                        path: dir + "/s", sha256: expectedSHA256(size: 256 << 10, seed: 104), bytes: 256 << 10))
            #expect(await settledRequests(server, "/bytes/256K?seed=104").count == 1)
            // Removed, it is gone from the log as well: a third engine does not know it.
            try await rerun.remove(small)
            await rerun.shutdown()
            let third = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration())
            #expect(await third.snapshot(small) == nil)
            #expect(await third.snapshot(id)?.state == .completed)
            await third.shutdown()
        }
        let durable = testConfiguration { $0.durability = .powerLoss }
        try await withEngine(durable) { server, engine, dir in
            let id = try await engine.add(.init(url: server.baseURL + "/bytes/300K?seed=103", destination: dir + "/d"))
            #expect(
                await engine.result(of: id)
                    == .completed(
                        path: dir + "/d", sha256: expectedSHA256(size: 300 << 10, seed: 103), bytes: 300 << 10))
        }
    }

    @Test("10. a task without a record file yet resumes after a kill from its partial file, through the task log")
    func taskLogResumesAfterAKill() async throws {
        try await withEngine { server, engine, dir in
            let url = server.baseURL + stalledOnce("/bytes/256K?seed=105", after: 64 << 10)
            let id = try await engine.add(.init(url: url, destination: dir + "/s"))
            try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) >= 32 << 10 }
            // What a kill -9 mid-body leaves: the state directory as it is now (the page cache keeps what was
            // written). The task never passes 256 KiB, so it has no record file, only its line in the task log.
            let killed = makeTemporaryDirectory()
            try FileManager.default.copyItem(atPath: dir + "/.rangefetch", toPath: killed + "/.rangefetch")
            try await engine.pause(id)
            let names = try FileManager.default.contentsOfDirectory(atPath: killed + "/.rangefetch")
            #expect(Set(names) == [StateStore.taskLogName, "\(id).part", StateDirectoryLock.fileName])
            let kept = try #require(FileIO.fileSize(killed + "/.rangefetch/\(id).part"))
            #expect(kept > 0)

            let restarted = try DownloadEngine(
                stateDirectory: killed + "/.rangefetch", configuration: testConfiguration())
            #expect(restarted.loadProblems.isEmpty)
            #expect(try await restarted.add(.init(url: url, destination: killed + "/s")) == id)
            #expect(
                await restarted.result(of: id)
                    == .completed(
                        path: killed + "/s", sha256: expectedSHA256(size: 256 << 10, seed: 105), bytes: 256 << 10))
            await restarted.shutdown()
            let gets = try await journalledGets(server, "/bytes/256K?seed=105")
            #expect(gets.count == 2)
            #expect(gets.last?.requestHeaders["range"] == "bytes=\(kept)-")
            #expect(gets.last?.requestHeaders["if-range"] == gets.first?.responseHeaders["etag"])
            #expect(gets.last?.status == 206)
        }
    }

    // MARK: 11. Verification

    @Test("11. verification .lengthOnly: no hashing, no Want-Repr-Digest, lengths checked, resume correct")
    func lengthOnlyVerification() async throws {
        let configuration = testConfiguration { $0.verification = .lengthOnly }
        try await withEngine(configuration) { server, engine, dir in
            let log = EventLog(engine.events())
            // Paused half way and resumed: the kept prefix is not re-read, the file is still right.
            let url = server.baseURL + stalledOnce("/bytes/1M?seed=111", after: 200 << 10)
            let id = try await engine.add(.init(url: url, destination: dir + "/l.bin"))
            try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) > 100_000 }
            try await engine.pause(id)
            try #require(await !settledRequests(server, "/bytes/").isEmpty, "the stopped response in the journal")
            let pausedAt = try #require(fileSize(dir + "/.rangefetch/\(id).part"))
            try await engine.resume(id)
            #expect(await engine.result(of: id) == .completed(path: dir + "/l.bin", sha256: nil, bytes: 1 << 20))
            #expect(try sha256(ofFile: dir + "/l.bin") == expectedSHA256(size: 1 << 20, seed: 111))
            let gets = try await journalledGets(server, "/bytes/1M?seed=111")
            #expect(gets.count == 2)
            #expect(gets[1].requestHeaders["range"] == "bytes=\(pausedAt)-")
            #expect(gets.allSatisfy { $0.requestHeaders["want-repr-digest"] == nil })
            let record = try StateStore.decode(Data(contentsOf: URL(fileURLWithPath: dir + "/.rangefetch/\(id).json")))
            #expect(record.state == .completed)
            #expect(record.sha256 == nil)
            try await eventually(.seconds(5), "completed event") {
                log.all.contains { if case .completed(id, _, nil, 1 << 20) = $0 { true } else { false } }
            }

            // A small body too, and an expected digest is refused rather than silently not checked.
            let small = try await engine.add(.init(url: server.baseURL + "/bytes/4K?seed=112", destination: dir + "/s"))
            #expect(await engine.result(of: small) == .completed(path: dir + "/s", sha256: nil, bytes: 4096))
            #expect(
                await settledRequests(server, "/bytes/4K").allSatisfy { $0.requestHeaders["want-repr-digest"] == nil })
            await #expect {
                try await engine.add(
                    .init(
                        url: server.baseURL + "/bytes/4K", destination: dir + "/x",
                        sha256: String(repeating: "a", count: 64)))
            } throws: {
                ($0 as? DownloadError)?.kind == "invalid-state"
            }
        }
        // The same partial file resumed by an engine that does hash: the prefix is re-read, the digest is right.
        let dir = makeTemporaryDirectory()
        try await withRangeServer(fixturesServerConfiguration) { server in
            let url = server.baseURL + stalledOnce("/bytes/1M?seed=113", after: 200 << 10)
            let first = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: configuration)
            let id = try await first.add(.init(url: url, destination: dir + "/m.bin"))
            try await eventually { (await first.snapshot(id)?.progress.bytes ?? 0) > 100_000 }
            await first.shutdown()
            let second = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration())
            try await second.resume(id)
            let result = await second.result(of: id)
            await second.shutdown()
            #expect(
                result
                    == .completed(
                        path: dir + "/m.bin", sha256: expectedSHA256(size: 1 << 20, seed: 113), bytes: 1 << 20))
        }
    }
}
