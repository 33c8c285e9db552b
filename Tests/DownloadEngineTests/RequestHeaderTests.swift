import Foundation
import HTTPTypes
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The text of every record of the state directory `state`: record files and the task log.
func recordTexts(_ state: String) -> String {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: state)) ?? []
    return names.filter { $0.hasSuffix(".json") || $0 == StateStore.taskLogName }.sorted()
        .compactMap { try? String(contentsOfFile: state + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
}

/// The pure rules of request headers: merging, the cross-origin strip, parsing, owned fields, what reaches disk.
@Suite("Request headers: rules")
struct RequestHeaderRuleTests {
    @Test("the request's field wins by name, case-insensitively; configuration order kept for the rest")
    func requestWins() {
        let merged = RequestHeaders.user(
            configuration: [("X-Team", "config"), ("User-Agent", "cfg/1")], request: [("x-team", "request")],
            sensitive: [], crossOrigin: false)
        #expect(merged.map(\.name) == ["User-Agent", "x-team"])
        #expect(merged.map(\.value) == ["cfg/1", "request"])
    }

    @Test("across origins the sensitive fields are dropped, whoever set them")
    func crossOriginStrip() {
        let policy = DownloadConfiguration.RedirectPolicy()
        #expect(policy.sensitiveHeaders == ["authorization", "cookie", "proxy-authorization"])
        let request: [(name: String, value: String)] = [
            ("AUTHORIZATION", "a"), ("Proxy-Authorization", "p"), ("X-Keep", "k"),
        ]
        let across = RequestHeaders.user(
            configuration: [("Cookie", "c")], request: request, sensitive: policy.sensitiveHeaders,
            crossOrigin: true)
        #expect(across.map(\.name) == ["X-Keep"])
        let same = RequestHeaders.user(
            configuration: [("Cookie", "c")], request: request, sensitive: policy.sensitiveHeaders,
            crossOrigin: false)
        #expect(same.count == 4)
    }

    @Test("'Name: value' parses as curl -H does; malformed and owned fields are refused naming the culprit")
    func parsing() throws {
        let parsed = try DownloadRequest.header(parsing: "X-Trace:  a: b \t")
        #expect(parsed.name.rawName == "X-Trace" && parsed.value == "a: b")
        let empty = try DownloadRequest.header(parsing: "X-Empty:")
        #expect(empty.value == "")
        let refused: [(line: String, culprit: String)] = [
            ("NoColon", "no colon"), ("Bad Name: x", "invalid header name 'Bad Name'"), (": x", "invalid header name"),
            ("X-A: a\r\nB: c", "line break"), ("range: bytes=0-", "'range' is set by the engine"),
            ("If-Range: x", "If-Range"), ("Accept-Encoding: gzip", "Accept-Encoding"), ("Host: h", "Host"),
            ("Want-Repr-Digest: x", "Want-Repr-Digest"), ("If-None-Match: *", "If-None-Match"),
        ]
        for (line, culprit) in refused {
            do {
                _ = try DownloadRequest.header(parsing: line)
                Issue.record("accepted \(line)")
            } catch let error as DownloadError {
                #expect(DownloadError.invalidHeader ~= error)
                #expect(error.kind == "invalid-header")
                #expect(error.message.contains(culprit), "\(error.message)")
                #expect(!error.message.contains("\n") && !error.message.contains("\r"))
            }
        }
    }

    @Test("credentials reach the disk only when stored; withheld names stay until given again")
    func forDisk() {
        let headers: [(name: String, value: String)] = [("Authorization", "a"), ("X-A", "1"), ("cookie", "c")]
        let kept = RequestHeaders.forDisk(headers, storesCredentials: false, withheld: [])
        #expect(kept.kept.map(\.name) == ["X-A"])
        #expect(kept.withheld == ["Authorization", "cookie"])
        let stored = RequestHeaders.forDisk(headers, storesCredentials: true, withheld: [])
        #expect(stored.kept.count == 3 && stored.withheld.isEmpty)
        // A record loaded without its secrets and saved again before they were given keeps asking for them.
        let loaded = RequestHeaders.forDisk([("X-A", "1")], storesCredentials: false, withheld: ["Authorization"])
        #expect(loaded.withheld == ["Authorization"])
        #expect(RequestHeaders.missing(["Authorization"], in: [("authorization", "x")]).isEmpty)
    }
}

/// Request headers through the engine, with the server's journal as the witness of what was sent.
@Suite("Request headers: engine")
struct RequestHeaderEngineTests {
    @Test("request and configuration headers are sent; the request's value wins by name")
    func headersSent() async throws {
        let configuration = testConfiguration {
            $0.headers = fields([("X-Team", "config"), ("User-Agent", "engine-tests/1")])
        }
        try await withEngine(configuration) { server, engine, dir in
            let url = server.baseURL + "/bytes/64K?seed=501"
            let request = DownloadRequest(
                url: url, destination: dir + "/a", headers: fields([("x-team", "request"), ("X-Extra", "1")]))
            let result = await engine.result(of: try await engine.add(request))
            #expect(
                result == .completed(path: dir + "/a", sha256: expectedSHA256(size: 64 << 10, seed: 501), bytes: 65536))
            let get = try #require(await settledRequests(server, "/bytes/64K?seed=501").first)
            #expect(get.requestHeaders["x-team"] == "request")
            #expect(get.requestHeaders["x-extra"] == "1")
            #expect(get.requestHeaders["user-agent"] == "engine-tests/1")
            #expect(get.requestHeaders["accept-encoding"] == "identity")
        }
    }

    @Test(
        "Authorization, Cookie and Proxy-Authorization cross no origin change (localhost vs 127.0.0.1); same-origin hops keep them"
    )
    func strippedAcrossOrigins() async throws {
        try await withEngine { server, engine, dir in
            let secrets: [(name: String, value: String)] = [
                ("Authorization", "Bearer secret"), ("Cookie", "session=1"), ("Proxy-Authorization", "Basic eA=="),
                ("X-Keep", "kept"),
            ]
            let other = "http://localhost:\(server.port)"
            let cases: [(seed: Int, from: String, to: String, crossOrigin: Bool)] = [
                (511, server.baseURL, other, true), (512, other, server.baseURL, true),
                (513, server.baseURL, server.baseURL, false),
            ]
            for (seed, from, to, crossOrigin) in cases {
                let target = to + "/bytes/64K?seed=\(seed)"
                let url = from + "/redirect-to?url=\(queryEncoded(target))&status_code=307"
                let id = try await engine.add(.init(url: url, destination: dir + "/\(seed)", headers: fields(secrets)))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/\(seed)", sha256: expectedSHA256(size: 65536, seed: UInt64(seed)),
                            bytes: 65536))
                let hop = try #require(await settledRequests(server, "/redirect-to?url=\(queryEncoded(target))").first)
                let landing = try #require(await settledRequests(server, "/bytes/64K?seed=\(seed)").first)
                #expect(hop.requestHeaders["authorization"] == "Bearer secret")
                #expect(hop.requestHeaders["cookie"] == "session=1")
                #expect(hop.requestHeaders["proxy-authorization"] == "Basic eA==")
                for name in ["authorization", "cookie", "proxy-authorization"] {
                    #expect((landing.requestHeaders[name] == nil) == crossOrigin, "\(seed) \(name)")
                }
                #expect(landing.requestHeaders["x-keep"] == "kept")
            }
        }
    }

    @Test("a header the engine owns is refused by add, naming it; nothing is requested")
    func ownedRefused() async throws {
        try await withEngine { server, engine, dir in
            let url = server.baseURL + "/bytes/1K?seed=521"
            for name in ["Range", "if-range", "Accept-Encoding", "Host", "Want-Repr-Digest", "Connection"] {
                do {
                    _ = try await engine.add(.init(url: url, destination: dir + "/a", headers: fields([(name, "x")])))
                    Issue.record("accepted \(name)")
                } catch let error as DownloadError {
                    #expect(DownloadError.invalidHeader ~= error)
                    #expect(error.message.contains("'\(name)'"), "\(error.message)")
                }
            }
            #expect(requests(server, "/bytes/1K?seed=521").isEmpty)
            #expect(await engine.allTasks.isEmpty)
        }
        // The configuration's fields are checked the same way.
        try await withEngine(testConfiguration { $0.headers = [.acceptEncoding: "gzip"] }) { server, engine, dir in
            let error = await #expect(throws: DownloadError.self) {
                _ = try await engine.add(.init(url: server.baseURL + "/bytes/1K", destination: dir + "/a"))
            }
            #expect(error?.message.contains("'Accept-Encoding'") == true, "\(String(describing: error))")
        }
    }

    /// Starts `request` (a download whose first response stalls, ``stalledOnce(_:after:)``, so the pause lands mid-body
    /// however late this task wakes: a paced body ended before the pause on a loaded CI machine), pauses it once bytes
    /// arrived, and returns the records' text.
    func pauseMidway(_ engine: DownloadEngine, _ request: DownloadRequest, state: String) async throws -> String {
        let id = try await engine.add(request)
        try await eventually { (await engine.snapshot(id)?.progress.bytes ?? 0) > 50_000 }
        try await engine.pause(id)
        return recordTexts(state)
    }

    @Test(
        "headers are stored in the record; credentials only when opted in; a resume after restart needs them again, and says so"
    )
    func storedInRecord() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let state = dir + "/.rangefetch"
            let url = server.baseURL + stalledOnce("/bytes/1M?seed=531", after: 200 << 10)
            let headers: [(name: String, value: String)] = [("Authorization", "Bearer s3cret"), ("X-A", "stored")]
            let text = try await withEngine(on: server, testConfiguration(), directory: dir) { _, engine, _ in
                try await pauseMidway(
                    engine, .init(url: url, destination: dir + "/a", headers: fields(headers)), state: state)
            }
            #expect(text.contains("X-A") && text.contains("stored"))
            #expect(!text.contains("s3cret"))
            #expect(text.contains("withheldHeaders"))

            try #require(
                await settledRequests(server, "/bytes/1M?seed=531").count == 1, "the paused response in the journal")
            // A new engine (a restart): without the credential the task is not resumed, with it it is.
            try await withEngine(on: server, testConfiguration(), directory: dir) { _, engine, _ in
                do {
                    _ = try await engine.add(.init(url: url, destination: dir + "/a"))
                    Issue.record("resumed without the credential")
                } catch let error as DownloadError {
                    #expect(DownloadError.credentialsRequired ~= error)
                    #expect(error.kind == "credentials-required")
                    #expect(error.message.contains("Authorization"), "\(error.message)")
                    #expect(!error.message.contains("s3cret"))
                }
                #expect(await settledRequests(server, "/bytes/1M?seed=531").count == 1)
                let id = try await engine.add(
                    .init(url: url, destination: dir + "/a", headers: [.authorization: "Bearer s3cret"]))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/a", sha256: expectedSHA256(size: 1 << 20, seed: 531), bytes: 1 << 20))
            }
            let gets = await settledRequests(server, "/bytes/1M?seed=531").sorted { $0.arrival < $1.arrival }
            #expect(gets.count == 2)
            let resume = try #require(gets.last)
            #expect(resume.requestHeaders["range"] != nil)
            #expect(resume.requestHeaders["authorization"] == "Bearer s3cret")
            // Not given again: sent from the record.
            #expect(resume.requestHeaders["x-a"] == "stored")

            // Opted in: the credential is on disk and the restart needs nothing.
            let other = makeTemporaryDirectory()
            let otherURL = server.baseURL + stalledOnce("/bytes/1M?seed=532", after: 200 << 10)
            let stored = try await withEngine(on: server, testConfiguration(), directory: other) { _, engine, _ in
                try await pauseMidway(
                    engine,
                    .init(url: otherURL, destination: other + "/b", headers: fields(headers), storesCredentials: true),
                    state: other + "/.rangefetch")
            }
            #expect(stored.contains("s3cret"))
            #expect(!stored.contains("withheldHeaders"))
            try await withEngine(on: server, testConfiguration(), directory: other) { _, engine, _ in
                let id = try await engine.add(.init(url: otherURL, destination: other + "/b"))
                #expect(
                    await engine.result(of: id)
                        == .completed(
                            path: other + "/b", sha256: expectedSHA256(size: 1 << 20, seed: 532), bytes: 1 << 20))
            }
            let last = try #require(await settledRequests(server, "/bytes/1M?seed=532").max { $0.arrival < $1.arrival })
            #expect(last.requestHeaders["authorization"] == "Bearer s3cret")
            #expect(last.requestHeaders["range"] != nil)
        }
    }

    @Test("a record written before headers were stored still loads")
    func oldRecordDecodes() throws {
        let json = """
            {"created":"2026-11-20T10:00:00Z","destination":"../a","format":"rangefetch-task","id":"0d6c1f2e-1111-4222-8333-444455556666",\
            "overwrite":false,"partial":"0d6c1f2e-1111-4222-8333-444455556666.part","recordedLength":0,"redirects":[],\
            "state":"paused","updated":"2026-11-20T10:00:00Z","url":"http://127.0.0.1:1/x","version":1}
            """
        let record = try StateStore.decode(Data(json.utf8))
        #expect(record.headers == nil && record.requestHeaders.isEmpty && record.withheldHeaders == nil)
    }
}
