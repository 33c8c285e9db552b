import Foundation
import RangeServer
import Testing

@testable import DownloadEngine

@Suite("rangefetch write failures", .serialized)
struct WriteFailureTests {
    @Test("past RLIMIT_FSIZE: exit 1 with EFBIG, partial kept; a rerun without the limit resumes from it")
    func fileSizeLimitKeepsPartialAndResumes() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: rangefetchPath), "missing \(rangefetchPath)")
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let path = "/bytes/4M?seed=131"
            let digest = expectedSHA256(size: 4 << 20, seed: 131)
            let blocks = 2048
            let limit = Int64(blocks * 512)
            let arguments = [server.baseURL + path, "-o", dir + "/out.bin", "--json"]

            let limited = try await Child.start(arguments, logs: dir + "/limited", fileSizeLimit: blocks)
            let status = try await limited.wait()
            #expect(status < 128, "killed by signal \(status - 128) (SIGXFSZ not ignored?)")
            #expect(status == 1, "\(limited.errors)")
            #expect(limited.output.contains("File too large"), "\(limited.output)")
            #expect(limited.output.contains("\"kind\":\"file-system\""))
            #expect(!FileManager.default.fileExists(atPath: dir + "/out.bin"))
            let partial = try #require(partialFiles(dir + "/.rangefetch").first)
            #expect(fileSize(partial) == limit)
            let recordPath = String(partial.dropLast(".part".count)) + ".json"
            let record = try String(contentsOfFile: recordPath, encoding: .utf8)
            #expect(record.contains("\"state\" : \"failed\""))
            #expect(record.contains("\"errorKind\" : \"file-system\""))

            let rerun = try await Child.start(arguments, logs: dir + "/rerun")
            #expect(try await rerun.wait() == 0, "\(rerun.errors)")
            #expect(try sha256(ofFile: dir + "/out.bin") == digest)
            #expect(partialFiles(dir + "/.rangefetch").isEmpty)

            let gets = await settledRequests(server, path).sorted { $0.seq < $1.seq }
            try #require(gets.count == 2, "\(gets.count) GETs in the journal")
            #expect(gets[0].requestHeaders["range"] == nil)
            #expect(gets[1].requestHeaders["range"] == "bytes=\(limit)-")
            #expect(gets[1].requestHeaders["if-range"] == gets[0].responseHeaders["etag"])
            #expect(gets[1].status == 206)
        }
    }
}
