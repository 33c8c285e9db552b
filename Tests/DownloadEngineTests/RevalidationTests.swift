import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// A rangeserver with the fixtures and one scenario, `NAME`, written into a temporary directory.
private func serverWithScenario(_ name: String, _ json: String) throws -> RangeServer.Configuration {
    let directory = makeTemporaryDirectory()
    try json.write(toFile: directory + "/\(name).json", atomically: true, encoding: .utf8)
    var configuration = fixturesServerConfiguration
    configuration.scenariosDirectory = directory
    return configuration
}

@Suite("Revalidating a completed download (-N)")
struct RevalidationTests {
    @Test("the conditional fields: If-None-Match with the ETag, else If-Modified-Since, else none")
    func conditionalHeaders() {
        let date = "Sat, 02 Jan 2021 00:00:00 GMT"
        #expect(
            Revalidation.conditionalHeaders(etag: "\"a\"", lastModified: date).map { "\($0.name): \($0.value)" } == [
                "If-None-Match: \"a\""
            ])
        #expect(
            Revalidation.conditionalHeaders(etag: "W/\"a\"", lastModified: nil).map { "\($0.name): \($0.value)" } == [
                "If-None-Match: W/\"a\""
            ])
        #expect(
            Revalidation.conditionalHeaders(etag: nil, lastModified: date).map { "\($0.name): \($0.value)" } == [
                "If-Modified-Since: \(date)"
            ])
        #expect(Revalidation.conditionalHeaders(etag: "", lastModified: "").isEmpty)
        #expect(Revalidation.conditionalHeaders(etag: nil, lastModified: nil).isEmpty)
    }

    @Test("only a 304 to a conditional request means not modified")
    func answers() {
        #expect(Revalidation.answer(status: 304, conditional: true) == .notModified)
        for status in [200, 206, 302, 412, 416, 503] {
            #expect(Revalidation.answer(status: status, conditional: true) == .handleAsDownload)
        }
        #expect(Revalidation.answer(status: 304, conditional: false) == .handleAsDownload)
    }

    @Test(
        "304 keeps the file; without revalidating nothing is asked; a new version replaces the file only once complete"
    )
    func notModifiedThenReplaced() async throws {
        let scenario = """
            { "description": "v1, v1, then v2 stalled after 300K (pause and resume), then v2.",
              "resource": "/bytes/768K?seed=81",
              "attempts": [ {}, {}, { "version": 2, "stall-after": "300K" }, {} ] }
            """
        try await withRangeServer(try serverWithScenario("reval", scenario)) { server in
            try await withEngine(on: server, testConfiguration()) { server, engine, dir in
                let url = server.baseURL + "/scenario/reval/r1"
                let output = dir + "/reval.bin"
                let v1 = expectedSHA256(size: 768 << 10, seed: 81)
                let v2 = expectedSHA256(size: 768 << 10, seed: 81, version: 2)
                let request = DownloadRequest(url: url, destination: output, revalidates: true)
                // A new task: -N changes nothing.
                let id = try await engine.add(request)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 768 << 10))
                #expect(await engine.snapshot(id)?.notModified == false)

                // Without revalidating, a completed task is not fetched again.
                #expect(try await engine.add(DownloadRequest(url: url, destination: output)) == id)
                #expect(await settledRequests(server, "/scenario/reval/").count == 1)

                // Revalidated: If-None-Match, 304, the file kept as it was.
                #expect(try await engine.add(request) == id)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 768 << 10))
                #expect(await engine.snapshot(id)?.notModified == true)
                #expect(try sha256(ofFile: output) == v1)
                var gets = await settledRequests(server, "/scenario/reval/").sorted { $0.arrival < $1.arrival }
                try #require(gets.count == 2)
                #expect(gets[1].requestHeaders["if-none-match"] == gets[0].responseHeaders["etag"])
                #expect(gets[1].requestHeaders["range"] == nil)
                #expect(gets[1].status == 304)
                #expect(partialFiles(dir + "/.rangefetch").isEmpty)

                // Revalidated again: version 2 arrives (and stalls); the old file stays whole until the new one is.
                #expect(try await engine.add(request) == id)
                let state = dir + "/.rangefetch"
                try await eventually { partialFiles(state).contains { (fileSize($0) ?? 0) >= 300 << 10 } }
                #expect(try sha256(ofFile: output) == v1)
                try await engine.pause(id)
                #expect(try sha256(ofFile: output) == v1)
                try await engine.resume(id)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v2, bytes: 768 << 10))
                #expect(await engine.snapshot(id)?.notModified == false)
                #expect(try sha256(ofFile: output) == v2)
                gets = await settledRequests(server, "/scenario/reval/").sorted { $0.arrival < $1.arrival }
                try #require(gets.count == 4, "\(gets.map { ($0.status, $0.requestHeaders) })")
                #expect(gets[2].requestHeaders["if-none-match"] == gets[0].responseHeaders["etag"])
                #expect(gets[2].status == 200)
                // The resume of the new version is an ordinary one, against its own ETag.
                #expect(gets[3].requestHeaders["range"] != nil)
                #expect(gets[3].requestHeaders["if-range"] == gets[2].responseHeaders["etag"])
                #expect(gets[3].requestHeaders["if-none-match"] == nil)
            }
        }
    }

    @Test("a revalidation paused before its answer stays one: the completed record stays, the resume asks again")
    func pausedRevalidation() async throws {
        // The pause below must land before the held-back 304, so the hold is a window for this task to act in: 5 s
        // stretched by the time scale (2 s once, which a loaded machine could outlast), half the idle timeout, so a
        // resume that meets the hold (a pause that caught the request still queued) waits it out without a retry.
        let hold = scaled(seconds: 5) as Int
        let scenario = """
            { "description": "v1, then a 304 held back \(hold) s, then v1 again.", "resource": "/bytes/300K?seed=84",
              "attempts": [ {}, { "delay": "\(hold)s" }, {} ] }
            """
        try await withRangeServer(try serverWithScenario("reval-pause", scenario)) { server in
            try await withEngine(on: server, testConfiguration()) { server, engine, dir in
                let url = server.baseURL + "/scenario/reval-pause/r1"
                let output = dir + "/p.bin"
                let v1 = expectedSHA256(size: 300 << 10, seed: 84)
                let request = DownloadRequest(url: url, destination: output, revalidates: true)
                let id = try await engine.add(request)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 300 << 10))
                #expect(try await engine.add(request) == id)
                // Wherever the pause lands before the answer (queued, or waiting for the head), it is the same.
                try await eventually { await engine.snapshot(id)?.state == .running }
                try await engine.pause(id)
                let record = try String(contentsOfFile: dir + "/.rangefetch/\(id).json", encoding: .utf8)
                #expect(record.contains("\"state\" : \"completed\""))
                #expect(partialFiles(dir + "/.rangefetch").isEmpty)
                try await engine.resume(id)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 300 << 10))
                #expect(await engine.snapshot(id)?.notModified == true)
                let gets = await settledRequests(server, "/scenario/reval-pause/").sorted { $0.arrival < $1.arrival }
                #expect(gets.last?.requestHeaders["if-none-match"] == gets.first?.responseHeaders["etag"])
                #expect(gets.last?.status == 304)
            }
        }
    }

    @Test("-x 4: the probe carries If-None-Match; a 304 keeps the file, a new version is fetched in segments")
    func segmented() async throws {
        let scenario = """
            { "description": "v1, v1, then v2, over four connections.", "resource": "/bytes/3M?seed=86",
              "attempts": [ {}, {}, { "version": 2 } ] }
            """
        try await withRangeServer(try serverWithScenario("reval-x4", scenario)) { server in
            let dir = makeTemporaryDirectory()
            let url = server.baseURL + "/scenario/reval-x4/r1"
            let output = dir + "/x4.bin"
            let request = DownloadRequest(url: url, destination: output, revalidates: true)
            let v1 = expectedSHA256(size: 3 << 20, seed: 86)
            // Fetched first over one connection: the scenario counts every request, segments too.
            let id = try await withEngine(on: server, testConfiguration(), directory: dir) { _, engine, _ in
                let id = try await engine.add(request)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 3 << 20))
                return id
            }
            let segmented = testConfiguration { $0.connectionsPerFile = 4 }
            try await withEngine(on: server, segmented, directory: dir) { server, engine, _ in
                #expect(try await engine.add(request) == id)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 3 << 20))
                #expect(await engine.snapshot(id)?.notModified == true)
                #expect(try await engine.add(request) == id)
                let v2 = expectedSHA256(size: 3 << 20, seed: 86, version: 2)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v2, bytes: 3 << 20))
                #expect(try sha256(ofFile: output) == v2)
                let gets = await settledRequests(server, "/scenario/reval-x4/").sorted { $0.arrival < $1.arrival }
                let conditional = gets.filter { $0.requestHeaders["if-none-match"] != nil }
                try #require(conditional.count == 2)
                #expect(conditional.map(\.status) == [304, 206])
                #expect(conditional.allSatisfy { $0.requestHeaders["range"] == "bytes=0-65535" })
                // The first download, the 304, the probe and more than one segment of version 2.
                #expect(gets.count > 4, "version 2 fetched in segments")
            }
        }
    }

    @Test("without an ETag: If-Modified-Since; a new version that fails verification leaves the old file")
    func lastModifiedAndFailedReplacement() async throws {
        let scenario = """
            { "description": "No ETag: v1, v1, then v2.", "resource": "/bytes/200K?seed=82&no-etag",
              "attempts": [ {}, {}, { "version": 2 } ] }
            """
        try await withRangeServer(try serverWithScenario("reval-lm", scenario)) { server in
            try await withEngine(on: server, testConfiguration()) { server, engine, dir in
                let url = server.baseURL + "/scenario/reval-lm/r1"
                let output = dir + "/lm.bin"
                let v1 = expectedSHA256(size: 200 << 10, seed: 82)
                // The digest of version 1 is expected: version 2 cannot pass.
                let request = DownloadRequest(url: url, destination: output, sha256: v1, revalidates: true)
                let id = try await engine.add(request)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 200 << 10))
                #expect(try await engine.add(request) == id)
                #expect(await engine.result(of: id) == .completed(path: output, sha256: v1, bytes: 200 << 10))
                #expect(await engine.snapshot(id)?.notModified == true)
                #expect(try await engine.add(request) == id)
                guard case .failed(let error) = await engine.result(of: id) else {
                    Issue.record("version 2 was accepted against version 1's digest")
                    return
                }
                #expect(error.kind == DownloadError.verificationFailed("").kind)
                #expect(try sha256(ofFile: output) == v1)
                let gets = await settledRequests(server, "/scenario/reval-lm/").sorted { $0.arrival < $1.arrival }
                try #require(gets.count == 3)
                #expect(gets[1].requestHeaders["if-modified-since"] == gets[0].responseHeaders["last-modified"])
                #expect(gets[1].requestHeaders["if-none-match"] == nil)
                #expect(gets[1].status == 304)
                #expect(gets[2].status == 200)
            }
        }
    }

    @Test("rangefetch -N killed while the new version arrives: the old file is intact; the next run finishes it")
    func killDuringReplacement() async throws {
        let scenario = """
            { "description": "v1, then v2 stalled after 300K, then v2.", "resource": "/bytes/768K?seed=85",
              "attempts": [ {}, { "version": 2, "stall-after": "300K" }, {} ] }
            """
        try await withRangeServer(try serverWithScenario("reval-kill", scenario)) { server in
            let dir = makeTemporaryDirectory()
            let url = server.baseURL + "/scenario/reval-kill/r1"
            let output = dir + "/k.bin"
            let v1 = expectedSHA256(size: 768 << 10, seed: 85)
            let first = try await Child.start([url, "-o", output], logs: dir + "/run1")
            #expect(try await first.wait() == 0, "\(first.errors)")
            let revalidate = try await Child.start(["-N", url, "-o", output], logs: dir + "/run2")
            let killed = await kill(revalidate, within: 60) {
                partialFiles(dir + "/.rangefetch").contains { (fileSize($0) ?? 0) >= 300 << 10 }
            }
            try #require(killed, "the new version never reached 300 KiB")
            #expect(try await revalidate.wait() == 128 + SIGKILL)
            #expect(try sha256(ofFile: output) == v1)
            // Without -N: the replacement under way is finished, not left for a completed download.
            let rerun = try await Child.start([url, "-o", output], logs: dir + "/run3")
            #expect(try await rerun.wait() == 0, "\(rerun.errors)")
            #expect(try sha256(ofFile: output) == expectedSHA256(size: 768 << 10, seed: 85, version: 2))
            let gets = await settledRequests(server, "/scenario/reval-kill/").sorted { $0.arrival < $1.arrival }
            try #require(gets.count == 3)
            #expect(gets[1].requestHeaders["if-none-match"] == gets[0].responseHeaders["etag"])
            #expect(gets[2].requestHeaders["if-range"] == gets[1].responseHeaders["etag"])
            #expect(gets[2].status == 206)
        }
    }

    @Test("rangefetch -N: 'not modified' and exit 0; a rerun without -N asks nothing")
    func commandLine() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let url = server.baseURL + "/bytes/64K?seed=83"
            let output = dir + "/n.bin"
            let first = try await Child.start([url, "-o", output], logs: dir + "/run1")
            #expect(try await first.wait() == 0, "\(first.errors)")
            let again = try await Child.start(["-N", url, "-o", output], logs: dir + "/run2")
            #expect(try await again.wait() == 0, "\(again.errors)")
            #expect(again.output.contains("n.bin: not modified, kept \(output)"), "\(again.output)")
            let json = try await Child.start(["-N", "--json", url, "-o", output], logs: dir + "/run3")
            #expect(try await json.wait() == 0, "\(json.errors)")
            #expect(json.output.contains(#""event":"not-modified""#), "\(json.output)")
            let plain = try await Child.start([url, "-o", output], logs: dir + "/run4")
            #expect(try await plain.wait() == 0, "\(plain.errors)")
            #expect(!plain.output.contains("not modified"))
            #expect(try sha256(ofFile: output) == expectedSHA256(size: 64 << 10, seed: 83))
            let gets = await settledRequests(server, "/bytes/64K?seed=83").sorted { $0.arrival < $1.arrival }
            #expect(gets.map(\.status) == [200, 304, 304])
        }
    }
}
