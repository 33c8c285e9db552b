import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// `download(_:)`: cancelling the Swift task that awaits a download pauses or removes it.
@Suite("Structured cancellation")
struct StructuredCancellationTests {
    /// Starts `download(_:)` of a paced 1 MiB body in a task of its own, cancels that task once bytes arrived, and
    /// returns what the call threw, the task's id and the journal entry of the stopped response. The body stalls 5 s
    /// after 200 KiB, so the cancellation lands mid-body however late this task wakes: on a loaded machine the paced
    /// body alone once ended before the test looked at it.
    func cancelMidway(
        _ server: RangeServer, _ engine: DownloadEngine, _ request: DownloadRequest, prefix: String
    ) async throws -> (error: (any Error)?, id: DownloadTaskID, entry: JournalEntry) {
        let work = Task { try await engine.download(request) }
        try await eventually { (await engine.allTasks.first?.progress.bytes ?? 0) > 100_000 }
        let id = try #require(await engine.allTasks.first?.id)
        work.cancel()
        var thrown: (any Error)?
        do {
            let result = try await work.value
            Issue.record("returned \(result)")
        } catch {
            thrown = error
        }
        // The server journals a response when it ends: once the journal settles, the transfer really stopped.
        let gets = await settledRequests(server, prefix)
        try #require(gets.count == 1, "the stopped response in the journal: \(gets.count) responses")
        return (thrown, id, gets[0])
    }

    @Test(
        "with .pause (the default) the partial file and record stay, the call throws CancellationError, and the next call resumes"
    )
    func cancellationPauses() async throws {
        #expect(DownloadConfiguration().onTaskCancellation == .pause)
        try await withEngine { server, engine, dir in
            let url = server.baseURL + "/bytes/1M?seed=701&rate=\(paced(256))&stall-after=200K&stall-for=5s"
            let request = DownloadRequest(url: url, destination: dir + "/a")
            let (error, id, entry) = try await cancelMidway(server, engine, request, prefix: "/bytes/1M?seed=701")
            #expect(error is CancellationError)
            #expect(
                [.clientClosed, .stalled].contains(entry.outcome), "stopped by the client, mid-body or in the stall")
            #expect(entry.bodyBytesSent < 1 << 20)
            #expect(await engine.snapshot(id)?.state == .paused)
            let partial = try #require(fileSize(dir + "/.rangefetch/\(id).part"))
            #expect(partial > 0)
            #expect(recordTexts(dir + "/.rangefetch").contains(id.rawValue))
            #expect(!FileManager.default.fileExists(atPath: dir + "/a"))

            // Not cancelled this time: it resumes from the partial file and completes.
            let result = try await engine.download(request)
            #expect(
                result == .completed(path: dir + "/a", sha256: expectedSHA256(size: 1 << 20, seed: 701), bytes: 1 << 20)
            )
            let gets = await settledRequests(server, "/bytes/1M?seed=701").sorted { $0.arrival < $1.arrival }
            #expect(gets.count == 2)
            #expect(gets.last?.requestHeaders["range"] == "bytes=\(partial)-")
        }
    }

    @Test("with .cancel the partial file and record are removed before the call throws CancellationError")
    func cancellationCancels() async throws {
        try await withEngine(testConfiguration { $0.onTaskCancellation = .cancel }) { server, engine, dir in
            let url = server.baseURL + "/bytes/1M?seed=702&rate=\(paced(256))&stall-after=200K&stall-for=5s"
            let (error, id, entry) = try await cancelMidway(
                server, engine, .init(url: url, destination: dir + "/a"), prefix: "/bytes/1M?seed=702")
            #expect(error is CancellationError)
            #expect(
                [.clientClosed, .stalled].contains(entry.outcome), "stopped by the client, mid-body or in the stall")
            #expect(await engine.snapshot(id) == nil)
            #expect(fileSize(dir + "/.rangefetch/\(id).part") == nil)
            #expect(!recordTexts(dir + "/.rangefetch").contains(id.rawValue))
            #expect(!FileManager.default.fileExists(atPath: dir + "/a"))
        }
    }

    @Test("a task cancelled before the call adds nothing; a download that completes returns its result")
    func edges() async throws {
        try await withEngine { server, engine, dir in
            let url = server.baseURL + "/bytes/1K?seed=703"
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await engine.download(.init(url: url, destination: dir + "/a"))
            }
            await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
            #expect(await engine.allTasks.isEmpty)
            let result = try await engine.download(.init(url: url, destination: dir + "/a"))
            #expect(result == .completed(path: dir + "/a", sha256: expectedSHA256(size: 1024, seed: 703), bytes: 1024))
        }
    }
}
