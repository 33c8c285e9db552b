import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// `VALUE` as the query value of `content-disposition=VALUE` (docs/faults.md, "Header values"): every byte but the
/// unreserved ones percent-encoded.
func dispositionQuery(_ value: String) -> String {
    var allowed = CharacterSet.alphanumerics.intersection(.init(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
    allowed.insert(charactersIn: "-._~")
    return "content-disposition=" + value.addingPercentEncoding(withAllowedCharacters: allowed)!
}

/// The files directly in `directory`, hidden ones (the state directory) left out, sorted.
func visibleFiles(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
}

@Suite("Names from Content-Disposition (-J)")
struct RemoteHeaderNameTests {
    @Test("filename* wins over filename, and the file is saved under it in the directory")
    func extendedNameWins() async throws {
        try await withEngine { server, engine, dir in
            let value = "attachment; filename=\"plain.bin\"; filename*=UTF-8''%C3%A9t%C3%A9.bin"
            let url = server.baseURL + "/bytes/100K?seed=71&" + dispositionQuery(value)
            let id = try await engine.add(.init(url: url, destination: dir + "/out", namesFromResponse: true))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/out/été.bin", sha256: expectedSHA256(size: 100 << 10, seed: 71),
                        bytes: 100 << 10))
            #expect(visibleFiles(dir + "/out") == ["été.bin"])
            #expect(await engine.snapshot(id)?.destination == dir + "/out/été.bin")
        }
    }

    @Test(
        "a name with directories or leading dots stays one name inside the directory; none usable: the URL's",
        arguments: [
            ("attachment; filename=\"../../escaped.bin\"", "escaped.bin"),
            ("attachment; filename=\"/etc/cron.d/job\"", "job"),
            ("attachment; filename=\".profile\"", "profile"),
            ("attachment; filename=\"..\"", "64K"),
            ("attachment; filename=\"\"", "64K"),
            ("inline", "64K"),
        ])
    func sanitisedInsideDirectory(value: String, expected: String) async throws {
        try await withEngine { server, engine, dir in
            let url = server.baseURL + "/bytes/64K?seed=72&" + dispositionQuery(value)
            let id = try await engine.add(.init(url: url, destination: dir + "/out", namesFromResponse: true))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/out/" + expected, sha256: expectedSHA256(size: 64 << 10, seed: 72),
                        bytes: 64 << 10))
            #expect(visibleFiles(dir + "/out") == [expected])
            #expect(visibleFiles(dir) == ["out"])
        }
    }

    @Test("without Content-Disposition the file takes the URL's last path segment")
    func urlNameWithoutHeader() async throws {
        try await withEngine { server, engine, dir in
            let id = try await engine.add(
                .init(url: server.baseURL + "/bytes/32K?seed=73", destination: dir, namesFromResponse: true))
            #expect(
                await engine.result(of: id)
                    == .completed(
                        path: dir + "/32K", sha256: expectedSHA256(size: 32 << 10, seed: 73), bytes: 32 << 10))
        }
    }

    @Test("a name that changes on the resume keeps the first, across a new engine on the state directory")
    func firstNameKept() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            // The first response names the file first.bin and stalls after 300 KiB; the later ones (the fault keys
            // apply to the first request only) carry no Content-Disposition, so a rename would give the URL's name.
            let path = stalledOnce(
                "/bytes/1M?seed=74&" + dispositionQuery("attachment; filename=\"first.bin\""), after: 300 << 10)
            let request = DownloadRequest(url: server.baseURL + path, destination: dir, namesFromResponse: true)
            let id = try await withEngine(on: server, testConfiguration(), directory: dir) { _, engine, _ in
                let id = try await engine.add(request)
                try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) >= 300 << 10 }
                #expect(await engine.snapshot(id)?.destination == dir + "/first.bin")
                try await engine.pause(id)
                return id
            }
            let (again, result) = try await withEngine(on: server, testConfiguration(), directory: dir) {
                _, engine, _ in
                let again = try await engine.add(request)
                return (again, await engine.result(of: again))
            }
            #expect(again == id)
            #expect(
                result
                    == .completed(
                        path: dir + "/first.bin", sha256: expectedSHA256(size: 1 << 20, seed: 74), bytes: 1 << 20))
            #expect(visibleFiles(dir) == ["first.bin"])
            // In the order they arrived: the stalled first one is journalled when its connection closes.
            let gets = await settledRequests(server, "/bytes/1M?seed=74").sorted { $0.arrival < $1.arrival }
            try #require(gets.count == 2)
            #expect(gets[0].responseHeaders["content-disposition"] == "attachment; filename=\"first.bin\"")
            #expect(gets[1].responseHeaders["content-disposition"] == nil)
            #expect(gets[1].requestHeaders["range"] != nil)
        }
    }

    @Test("rangefetch -J: kill -9 mid-body, and the rerun finishes the file under the first name")
    func killNineKeepsName() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            // Stalled under 256 KiB: the name reaches the disk in the task log, before any record file.
            let path = stalledOnce(
                "/bytes/1M?seed=75&" + dispositionQuery("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.bin"),
                after: 200 << 10)
            let arguments = ["-J", "--output", dir + "/", server.baseURL + path]
            let first = try await Child.start(arguments, logs: dir + "/run1")
            let killed = await kill(first, within: 60) {
                partialFiles(dir + "/.rangefetch").contains { (fileSize($0) ?? 0) >= 200 << 10 }
            }
            try #require(killed, "the partial file never reached 200 KiB")
            #expect(try await first.wait() == 128 + SIGKILL)
            let rerun = try await Child.start(arguments, logs: dir + "/run2")
            #expect(try await rerun.wait() == 0, "\(rerun.errors)")
            #expect(visibleFiles(dir).filter { !$0.hasPrefix("run") } == ["résumé.bin"])
            #expect(try sha256(ofFile: dir + "/résumé.bin") == expectedSHA256(size: 1 << 20, seed: 75))
            #expect(rerun.output.contains("résumé.bin"))
            let gets = await settledRequests(server, "/bytes/1M?seed=75").sorted { $0.arrival < $1.arrival }
            #expect(gets.last?.requestHeaders["range"] != nil)
        }
    }

    @Test("rangefetch -J with -o FILE: one usage line, exit 64")
    func fileOutputIsUsageError() async throws {
        let dir = makeTemporaryDirectory()
        let run = try await Child.start(
            ["-J", "-o", dir + "/named.bin", "http://127.0.0.1:1/x"], logs: dir + "/usage")
        #expect(try await run.wait() == 64)
        #expect(run.errors.split(separator: "\n").count == 1)
        #expect(run.errors.contains("-J") && run.errors.contains("named.bin"))
    }
}
