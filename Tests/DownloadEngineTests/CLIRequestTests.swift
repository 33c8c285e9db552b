import Foundation
import RangeServer
import Subprocess
import TestSupport
import Testing

@testable import DownloadEngine

/// Starts `rangefetch` with `variables` set (or, with `nil` values, removed) in its inherited environment.
func startRangefetch(
    _ arguments: [String], logs: String, environment variables: [Environment.Key: String?] = [:]
) async throws -> Child {
    // No proxy from the test runner's own environment unless a test sets one.
    var environment: [Environment.Key: String?] = [
        "http_proxy": nil, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil, "ALL_PROXY": nil,
        "no_proxy": nil, "NO_PROXY": nil,
    ]
    environment.merge(variables) { $1 }
    let process = try await ChildProcess.start(rangefetchPath, arguments, environment: .inherit.updating(environment))
    return Child(process: process, logs: logs)
}

/// `rangefetch -H`, `--user-agent`, `--store-credentials`, `--proxy` and `--noproxy`, with the server's journal and
/// the proxy's record as witnesses.
@Suite("rangefetch headers and proxies", .serialized)
struct CLIRequestTests {
    @Test("-H and --user-agent are sent; a -H User-Agent wins")
    func headersSent() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let run = try await startRangefetch(
                [
                    server.baseURL + "/bytes/1K?seed=801", "-o", dir + "/a", "-H", "X-Trace: t1", "--header",
                    "Cookie:  c=1 ", "--user-agent", "fetch-tests/1",
                ], logs: dir + "/a")
            #expect(try await run.wait() == 0, "\(run.errors)")
            let get = try #require(await settledRequests(server, "/bytes/1K?seed=801").first)
            #expect(get.requestHeaders["x-trace"] == "t1")
            #expect(get.requestHeaders["cookie"] == "c=1")
            #expect(get.requestHeaders["user-agent"] == "fetch-tests/1")

            let both = try await startRangefetch(
                [
                    server.baseURL + "/bytes/1K?seed=802", "-o", dir + "/b", "--user-agent", "a/1", "-H",
                    "user-agent: b/2",
                ],
                logs: dir + "/b")
            #expect(try await both.wait() == 0, "\(both.errors)")
            #expect(await settledRequests(server, "/bytes/1K?seed=802").first?.requestHeaders["user-agent"] == "b/2")
        }
    }

    @Test(
        "a malformed or engine-owned -H is one usage line naming it, exit 64",
        arguments: [
            (["-H", "Range: bytes=0-"], "'Range' is set by the engine"), (["-H", "NoColon"], "'NoColon'"),
            (["-H", "Bad Name: x"], "'Bad Name'"), (["--user-agent", "a\r\nX: y"], "line break"),
            (["-H", "accept-encoding: gzip"], "'accept-encoding'"),
        ])
    func badHeader(arguments: [String], culprit: String) async throws {
        let dir = makeTemporaryDirectory()
        let run = try await startRangefetch(arguments + ["http://127.0.0.1:1/x", "-o", dir + "/x"], logs: dir + "/x")
        #expect(try await run.wait() == 64)
        let lines = run.errors.split(separator: "\n")
        #expect(lines.count == 1, "\(run.errors)")
        #expect(run.errors.contains(culprit), "\(run.errors)")
    }

    @Test(
        "an Authorization not stored: the resume after restart says to give it again; given again, it resumes with it")
    func credentialsGivenAgain() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let url = server.baseURL + "/bytes/1M?seed=811&rate=\(paced(256))"
            let auth = ["-H", "Authorization: Bearer t0ken"]
            let base = [url, "-o", dir + "/a", "--retries", "0", "-H", "X-Kept: yes"]
            // Stopped by its deadline midway: a failed task with its partial file and record. The second must hold the
            // child's start, its request and the first bytes, so it is stretched by the time scale, as `paced` slows
            // the body: the deadline still ends the same share of it.
            let deadline = "\(scaled(seconds: 1) as Int)s"
            let first = try await startRangefetch(base + auth + ["--deadline", deadline], logs: dir + "/first")
            #expect(try await first.wait() == 4, "\(first.errors)")
            let records = recordTexts(dir + "/.rangefetch")
            #expect(records.contains("X-Kept") && !records.contains("t0ken"))

            try #require(
                await settledRequests(server, "/bytes/1M?seed=811").count == 1,
                "the first run's response in the journal")
            let without = try await startRangefetch(base, logs: dir + "/without")
            #expect(try await without.wait() == 64)
            #expect(without.errors.split(separator: "\n").count == 1, "\(without.errors)")
            #expect(without.errors.contains("Authorization") && without.errors.contains("-H"), "\(without.errors)")

            let again = try await startRangefetch([url, "-o", dir + "/a"] + auth, logs: dir + "/again")
            #expect(try await again.wait() == 0, "\(again.errors)")
            #expect(try sha256(ofFile: dir + "/a") == expectedSHA256(size: 1 << 20, seed: 811))
            // Two requests in all: the refused run sent none.
            #expect(await settledRequests(server, "/bytes/1M?seed=811").count == 2)
            let resume = try #require(requests(server, "/bytes/1M?seed=811").max { $0.arrival < $1.arrival })
            #expect(resume.requestHeaders["range"] != nil)
            #expect(resume.requestHeaders["authorization"] == "Bearer t0ken")
            #expect(resume.requestHeaders["x-kept"] == "yes")
        }
    }

    @Test("http_proxy is honoured; HTTP_PROXY is not; --proxy '' and --noproxy bypass it; --proxy overrides")
    func proxyOptions() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                let dir = makeTemporaryDirectory()
                let runs:
                    [(name: String, arguments: [String], environment: [Environment.Key: String?], proxied: Bool)] = [
                        ("env", [], ["http_proxy": proxy.url], true),
                        ("upper", [], ["HTTP_PROXY": proxy.url], false),
                        ("disabled", ["--proxy", ""], ["http_proxy": proxy.url], false),
                        ("noproxy", ["--noproxy", "example.com,127.0.0.1"], ["http_proxy": proxy.url], false),
                        ("env-noproxy", [], ["http_proxy": proxy.url, "no_proxy": "127.0.0.1"], false),
                        ("option", ["--proxy", "127.0.0.1:\(proxy.port)"], ["http_proxy": "http://127.0.0.1:1"], true),
                    ]
                for (index, run) in runs.enumerated() {
                    let before = proxy.requests.count
                    let child = try await startRangefetch(
                        [server.baseURL + "/bytes/1K?seed=\(820 + index)", "-o", dir + "/\(run.name)"] + run.arguments,
                        logs: dir + "/\(run.name)", environment: run.environment)
                    #expect(try await child.wait() == 0, "\(run.name): \(child.errors)")
                    let lines = proxy.requests.dropFirst(before).map(\.line)
                    let get = "GET \(server.baseURL)/bytes/1K?seed=\(820 + index) HTTP/1.1"
                    #expect(lines == (run.proxied ? [get] : []), "\(run.name)")
                    #expect(await settledRequests(server, "/bytes/1K?seed=\(820 + index)").count == 1, "\(run.name)")
                }
                let bad = try await startRangefetch(
                    [server.baseURL + "/bytes/1K", "-o", dir + "/bad"], logs: dir + "/bad",
                    environment: ["https_proxy": "socks5://127.0.0.1:1"])
                #expect(try await bad.wait() == 64)
                #expect(bad.errors.contains("https_proxy") && bad.errors.split(separator: "\n").count == 1)
            }
        }
    }
}
