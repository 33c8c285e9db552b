import Foundation
import RangeServer
import TestSupport
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

    @Test(
        "on a full disk: one line naming it, exit 1, the partial and its record kept",
        .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), "needs root")
    )
    func fullDiskIsNamedInOneLine() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            // A 1 MiB tmpfs in a mount namespace of the shell's own, so nothing is mounted where anyone else sees it;
            // the shell lists what is left on it before the namespace, and the tmpfs, go away with it.
            let script = """
                mount -t tmpfs -o size=1m,nosuid,nodev rangefetch-full "$1" || exit 90
                "$2" "$3" -o "$1/out.bin"
                status=$?
                for file in "$1"/.rangefetch/*; do echo "kept ${file##*/} $(stat -c %s "$file")"; done
                exit $status
                """
            let child = try await ChildProcess.start(
                "/usr/bin/unshare",
                [
                    "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", dir, rangefetchPath,
                    server.baseURL + "/bytes/4M?seed=132",
                ])
            let status = try #require(await child.wait(limit: .seconds(60)))
            try #require(ChildProcess.code(status) != 90, "could not mount a tmpfs: \(child.errors)")
            #expect(ChildProcess.code(status) == 1, "\(child.errors)")
            let lines = child.errors.split(separator: "\n")
            #expect(lines.count == 1, "\(child.errors)")
            #expect(lines.first?.contains("disk full: ") == true, "\(child.errors)")
            #expect(lines.first?.contains("what was written is kept, make room and run again to resume") == true)
            let kept = child.output.split(separator: "\n").filter { $0.hasPrefix("kept ") }
            let partial = try #require(kept.first { $0.contains(".part ") }, "\(child.output)")
            #expect((Int(partial.split(separator: " ").last ?? "") ?? 0) > 512 << 10, "\(partial)")
            #expect(kept.contains { $0.contains(".json ") }, "no task record kept: \(child.output)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/out.bin"))
        }
    }
}
