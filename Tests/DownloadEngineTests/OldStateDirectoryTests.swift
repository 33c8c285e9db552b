import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// State directories written by the engine before issue 31 (fixtures/state, see its README) resume with today's
/// engine: the on-disk format did not change.
@Suite("State directories written before the request policy", .serialized)
struct OldStateDirectoryTests {
    /// The origin the fixtures' URLs were recorded with.
    static let recordedOrigin = "http://127.0.0.1:35471"

    static let fixtures: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("fixtures/state").path
    }()

    /// Copies the fixture state directory `name` to `<dir>/out/.rangefetch`, with `origin` in place of the recorded
    /// one in every record and log line.
    func copyFixture(_ name: String, to dir: String, origin: String) throws -> String {
        let state = dir + "/out/.rangefetch"
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.fixtures + "/" + name, toPath: state)
        for file in try FileManager.default.contentsOfDirectory(atPath: state)
        where file.hasSuffix(".json") || file == StateStore.taskLogName {
            let path = state + "/" + file
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains(Self.recordedOrigin), "\(file) names the recorded origin")
            try text.replacingOccurrences(of: Self.recordedOrigin, with: origin)
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        return state
    }

    @Test("a record file and a task-log line from a killed single-stream run resume at their partial files' ends")
    func singleStream() async throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await withRangeServer(fixturesServerConfiguration) { server in
            let state = try copyFixture("single-stream", to: dir, origin: server.baseURL)
            // The digests the server announced to the killed run (its `Repr-Digest`, kept in the records): what
            // `expectedSHA256(size:seed:)` computes for these files, without generating them again here.
            let files: [(path: String, size: Int, etag: String, sha256: String, id: String)] = [
                (
                    "/bytes/640K?seed=31", 640 << 10, "\"ba0000-1f-v1\"",
                    "561595ce2dbc126be840c6608265891a8de6f4b190d670536199bd1ef019469b",
                    "ebbeceba-0b19-4df4-9d7e-c31744a6161c"
                ),
                (
                    "/bytes/512K?seed=32", 512 << 10, "\"b80000-20-v1\"",
                    "712465649b9125218b4ff9e316687f6d9110a7c5277feb22c8a63c490634a549",
                    "4f74e973-4709-4966-9b5a-41a74b8a6b76"
                ),
            ]
            let kept = files.map { fileSize(state + "/\($0.id).part") ?? 0 }
            #expect(kept == [453_632, 129_024])
            let engine = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
            #expect(engine.loadProblems.isEmpty)
            let loaded = await engine.allTasks
            #expect(Set(loaded.map(\.id.rawValue)) == Set(files.map(\.id)))
            #expect(loaded.allSatisfy { $0.state == .paused })
            for (file, held) in zip(files, kept) {
                let name = String(file.path.dropFirst("/bytes/".count).prefix { $0 != "?" })
                let id = try await engine.add(.init(url: server.baseURL + file.path, destination: dir + "/out/" + name))
                #expect(id.rawValue == file.id, "the request finds the loaded task")
                let result = await engine.result(of: id)
                guard case .completed(let path, let digest, let bytes) = result else {
                    Issue.record("\(file.path): \(result)")
                    continue
                }
                #expect(digest == file.sha256 && bytes == Int64(file.size))
                #expect(try sha256(ofFile: path) == file.sha256)
                let gets = await settledRequests(server, file.path)
                #expect(gets.count == 1, "\(file.path): \(gets.map(\.requestHeaders))")
                #expect(gets.first?.requestHeaders["range"] == "bytes=\(held)-")
                #expect(gets.first?.requestHeaders["if-range"] == file.etag)
                #expect(gets.first?.status == 206)
            }
            await engine.shutdown()
            #expect(!FileManager.default.fileExists(atPath: state + "/\(files[0].id).part"))
        }
    }

    @Test("a segmented record and its segment log from a killed run resume the ranges not done, and only those")
    func segmented() async throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await withRangeServer(fixturesServerConfiguration) { server in
            let state = try copyFixture("segmented", to: dir, origin: server.baseURL)
            let id = "022e6658-cef5-4b32-8be0-67e0e340cb86"
            let path = "/bytes/2560K?seed=33"
            let size = 2560 << 10
            // What the killed run had written: the record's ranges plus the segment log's.
            let record = try StateStore.decode(Data(contentsOf: URL(fileURLWithPath: state + "/\(id).json")))
            let done = SegmentPlan.complement(
                of: SegmentPlan.complement(
                    of: (record.segments ?? []) + SegmentLog.ranges(at: state + "/\(id).segments"),
                    in: 0..<Int64(size)),
                in: 0..<Int64(size))
            let doneBytes = done.reduce(0) { $0 + Int64($1.count) }
            #expect(doneBytes >= 64 << 10 && doneBytes < Int64(size), "the fixture holds part of the file: \(done)")
            let engine = try DownloadEngine(
                stateDirectory: state, configuration: testConfiguration { $0.connectionsPerFile = 3 })
            #expect(engine.loadProblems.isEmpty)
            let added = try await engine.add(.init(url: server.baseURL + path, destination: dir + "/out/2560K"))
            #expect(added.rawValue == id, "the request finds the loaded task")
            let result = await engine.result(of: added)
            await engine.shutdown()
            // The digest the server announced to the killed run (its `Repr-Digest`, kept in the record).
            let expected = "9bd89162081c4c0cff9670e8c4562f1f202d42cccc52d39f514d4291035ab358"
            guard case .completed(let output, let digest, _) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(digest == expected)
            #expect(try sha256(ofFile: output) == expected)
            let gets = await settledRequests(server, path)
            #expect(!gets.isEmpty)
            for get in gets {
                // Every request is a segment's: a bounded Range with the recorded ETag, starting in no range done.
                let range = try #require(get.requestHeaders["range"], "a request without Range: \(get.requestHeaders)")
                #expect(get.requestHeaders["if-range"] == "\"b280000-21-v1\"")
                let start = try #require(Int64(range.dropFirst("bytes=".count).prefix { $0 != "-" }))
                #expect(!done.contains { $0.contains(start) }, "\(range) starts inside a range already done: \(done)")
                #expect(get.status == 206)
            }
        }
    }
}
