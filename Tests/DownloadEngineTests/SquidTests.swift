import Foundation
import RangeServer
import Subprocess
import TestSupport
import Testing

@testable import DownloadEngine

/// The engine and `rangefetch` behind Debian's `squid` (``Squid``): its shipped rules for `http://` URLs, a test
/// rule letting `CONNECT` reach the TLS test port for `https://` URLs, and its refusals. The server's journal (squid
/// adds `Via` to what it forwards) and squid's access log are the witnesses.
@Suite("Proxies: squid", .serialized)
struct SquidTests {
    /// An engine configuration through `squid`, trusting the TLS server's CA when there is one.
    func through(
        _ squid: Squid, _ server: RangeServer, credentials: (String, String)? = nil, noProxy: [String] = [],
        _ adjust: (inout DownloadConfiguration) -> Void = { _ in }
    ) -> DownloadConfiguration {
        testConfiguration {
            $0.proxy = .init(
                .init(host: "127.0.0.1", port: squid.port, username: credentials?.0, password: credentials?.1),
                noProxy: noProxy)
            if let authority = server.certificateAuthorityPEM { $0.tls = .init(additionalCertificatesPEM: [authority]) }
            adjust(&$0)
        }
    }

    @Test("http:// through squid's shipped rules: absolute form, drops resumed with Range and If-Range, segments")
    func plainHTTP() async throws {
        try await withSquid { squid in
            try await withRangeServer(fixturesServerConfiguration) { server in
                try await withEngine(on: server, through(squid, server)) { server, engine, dir in
                    let dropped = try await engine.add(
                        .init(url: server.baseURL + "/bytes/1M?seed=701&drop-after=300K", destination: dir + "/a"))
                    #expect(
                        await engine.result(of: dropped)
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 1 << 20, seed: 701), bytes: 1 << 20))
                    let gets = await settledRequests(server, "/bytes/1M?seed=701").sorted { $0.seq < $1.seq }
                    #expect(
                        gets.map { $0.requestHeaders["range"] } == [
                            nil, "bytes=307200-", "bytes=614400-", "bytes=921600-",
                        ])
                    #expect(gets.dropFirst().allSatisfy { $0.requestHeaders["if-range"] != nil })
                    #expect(
                        gets.allSatisfy { $0.requestHeaders["via"]?.contains("squid") == true },
                        "\(gets.map(\.requestHeaders))")
                    // squid logs URLs without their query, and a transaction when it ends: perhaps just after the
                    // engine had the last byte.
                    let logged: @Sendable () -> Int = {
                        squid.accessLog.filter { $0.contains("GET \(server.baseURL)/bytes/1M?") }.count
                    }
                    try await eventually(.seconds(10), "four GETs in squid's log") { logged() >= 4 }
                    #expect(logged() == 4)
                }
                let segmented = through(squid, server) { $0.connectionsPerFile = 4 }
                try await withEngine(on: server, segmented) { server, engine, dir in
                    let id = try await engine.add(
                        .init(url: server.baseURL + "/bytes/8M?seed=702", destination: dir + "/b"))
                    #expect(
                        await engine.result(of: id)
                            == .completed(
                                path: dir + "/b", sha256: expectedSHA256(size: 8 << 20, seed: 702), bytes: 8 << 20))
                    let ranges = await settledRequests(server, "/bytes/8M?seed=702").compactMap {
                        $0.requestHeaders["range"]
                    }
                    #expect(ranges.count >= 4, "\(ranges)")
                }
            }
        }
    }

    @Test("https:// through squid with CONNECT allowed to the TLS port: a tunnel, drops resumed, Repr-Digest checked")
    func tunnelledHTTPS() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let base = try #require(server.tlsBaseURL)
            try await withSquid(.init(connectPorts: [port])) { squid in
                try await withEngine(on: server, through(squid, server)) { server, engine, dir in
                    let id = try await engine.add(
                        .init(url: base + "/bytes/1M?seed=703&drop-after=300K", destination: dir + "/a"))
                    #expect(
                        await engine.result(of: id)
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 1 << 20, seed: 703), bytes: 1 << 20))
                    let gets = await settledRequests(server, "/bytes/1M?seed=703").sorted { $0.seq < $1.seq }
                    #expect(gets.count == 4)
                    #expect(gets.allSatisfy { $0.tls && $0.requestHeaders["via"] == nil })
                    #expect(gets.dropFirst().allSatisfy { $0.requestHeaders["range"] != nil })
                    // squid logs a tunnel when it closes: the dropped ones' soon after their drops.
                    try await eventually(.seconds(10), "a tunnel in squid's log") {
                        squid.accessLog.contains { $0.contains("CONNECT 127.0.0.1:\(port)") }
                    }
                    // The digest the server announced was checked: every GET asked for it.
                    #expect(gets.allSatisfy { $0.requestHeaders["want-repr-digest"] != nil })
                }
            }
        }
    }

    @Test("Repr-Digest through squid, http:// and https://: bytes that disagree with it are fetched again from zero")
    func digestMismatchRestartsThroughSquid() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let base = try #require(server.tlsBaseURL)
            try await withSquid(.init(connectPorts: [port])) { squid in
                try await withEngine(on: server, through(squid, server)) { server, engine, dir in
                    for (seed, origin) in [(708, server.baseURL), (709, base)] {
                        // The first response replaces the bytes after 1K (the probability draw of fault-seed 5
                        // applies to a target's first request only); the digest it announced tells, and the
                        // task starts again from zero, served whole the second time.
                        let path = "/bytes/64K?seed=\(seed)&garbage-after=1K&probability=0.5&fault-seed=5"
                        let id = try await engine.add(.init(url: origin + path, destination: dir + "/\(seed)"))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(seed)", sha256: expectedSHA256(size: 64 << 10, seed: UInt64(seed)),
                                    bytes: 64 << 10))
                        // A response is journalled when the server finishes it, perhaps after the engine had it all.
                        _ = await server.journal.settled(timeout: scaled(.seconds(10)))
                        let gets = requests(server, path)
                        #expect(gets.count == 2, "\(gets.map { ($0.status, $0.requestHeaders) })")
                        // The restart asks caches not to answer from the bad bytes they stored: without that, squid
                        // revalidated (304 from the server) and sent its stored copy to each of three restarts.
                        #expect(gets.last?.requestHeaders["cache-control"] == "no-cache")
                        #expect(gets.allSatisfy { $0.requestHeaders["range"] == nil }, "both fetches start at zero")
                        #expect(gets.allSatisfy { $0.requestHeaders["want-repr-digest"] != nil })
                        #expect(gets.allSatisfy { $0.responseHeaders["repr-digest"] != nil })
                        #expect(gets.map(\.faultsApplied) == [true, false])
                    }
                }
            }
        }
    }

    @Test("squid's shipped rules refuse CONNECT to a port other than 443: one line naming squid and its 403, no retry")
    func shippedRulesRefuseTunnel() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let base = try #require(server.tlsBaseURL)
            try await withSquid { squid in
                try await withEngine(on: server, through(squid, server)) { server, engine, dir in
                    let log = EventLog(engine.events())
                    let id = try await engine.add(.init(url: base + "/bytes/1K", destination: dir + "/a"))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("did not fail")
                        return
                    }
                    #expect(
                        error.message
                            == "HTTP 403 from proxy \(squid.authority): CONNECT 127.0.0.1:\(server.tlsPort ?? 0) refused (ERR_ACCESS_DENIED)"
                    )
                    #expect(error.kind == "permanent-http-status")
                    #expect(retryErrors(log, id).isEmpty)
                    #expect(requests(server, "/bytes/").isEmpty)
                }
            }
        }
    }

    @Test("a squid that denies http:// is named with its status; a 407 with no or wrong credentials too")
    func refusals() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            try await withSquid(.init(deniesAll: true)) { squid in
                try await withEngine(on: server, through(squid, server)) { server, engine, dir in
                    let id = try await engine.add(.init(url: server.baseURL + "/bytes/1K", destination: dir + "/a"))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("did not fail")
                        return
                    }
                    #expect(
                        error.message
                            == "HTTP 403 from proxy \(squid.authority): GET \(server.baseURL)/bytes/1K refused (ERR_ACCESS_DENIED)"
                    )
                }
            }
            try await withSquid(.init(authenticates: true)) { squid in
                for (credentials, reason) in [
                    (nil, "it wants credentials"), (("fetcher", "wrong"), "it did not accept the credentials given"),
                ] as [((String, String)?, String)] {
                    try await withEngine(on: server, through(squid, server, credentials: credentials)) {
                        server, engine, dir in
                        let id = try await engine.add(.init(url: server.baseURL + "/bytes/1K", destination: dir + "/a"))
                        guard case .failed(let error) = await engine.result(of: id) else {
                            Issue.record("did not fail")
                            return
                        }
                        #expect(error.message.hasPrefix("HTTP 407 from proxy \(squid.authority): "), "\(error.message)")
                        #expect(error.message.contains(reason), "\(error.message)")
                        #expect(error.kind == "permanent-http-status")
                        #expect(!error.message.contains("wrong"))
                    }
                }
                #expect(requests(server, "/bytes/").isEmpty)
            }
        }
    }

    @Test("squid with basic authentication: the right credentials go to squid only, for http:// and https://")
    func authenticated() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let base = try #require(server.tlsBaseURL)
            try await withSquid(.init(connectPorts: [port], authenticates: true)) { squid in
                let configuration = through(squid, server, credentials: (Squid.user, Squid.password))
                try await withEngine(on: server, configuration) { server, engine, dir in
                    for (index, url) in [server.baseURL, base].enumerated() {
                        let id = try await engine.add(
                            .init(url: url + "/bytes/128K?seed=\(704 + index)", destination: dir + "/\(index)"))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(index)",
                                    sha256: expectedSHA256(size: 128 << 10, seed: UInt64(704 + index)),
                                    bytes: 128 << 10))
                    }
                    let gets = await settledRequests(server, "/bytes/128K?seed=70")
                    #expect(gets.count == 2)
                    #expect(gets.allSatisfy { $0.requestHeaders["proxy-authorization"] == nil })
                }
                // squid logs a tunnel when it closes: after the engine's shutdown closed the kept-alive one.
                try await eventually(.seconds(10), "the tunnel in squid's log") {
                    squid.accessLog.contains { $0.contains("CONNECT 127.0.0.1:\(port) \(Squid.user) ") }
                }
                #expect(squid.accessLog.contains { $0.contains("GET \(server.baseURL)/bytes/128K? \(Squid.user) ") })
            }
        }
    }

    @Test("a redirect to a host that no_proxy exempts leaves squid; a version change behind squid restarts, no splice")
    func redirectsAndVersionChange() async throws {
        let scenarios = makeTemporaryDirectory()
        try """
        { "description": "a drop, then another version", "resource": "/bytes/1M?seed=706",
          "attempts": [ { "drop-after": "300K" }, { "version": 2 } ] }
        """.write(toFile: scenarios + "/squid-version.json", atomically: true, encoding: .utf8)
        var serverConfiguration = fixturesServerConfiguration
        serverConfiguration.scenariosDirectory = scenarios
        try await withRangeServer(serverConfiguration) { server in
            try await withSquid { squid in
                try await withEngine(on: server, through(squid, server, noProxy: ["localhost"])) {
                    server, engine, dir in
                    let target = "http://localhost:\(server.port)/bytes/64K?seed=707"
                    let id = try await engine.add(
                        .init(url: server.baseURL + "/redirect-to?url=" + queryEncoded(target), destination: dir + "/a")
                    )
                    #expect(
                        await engine.result(of: id)
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 64 << 10, seed: 707), bytes: 64 << 10))
                    let hop = try #require(await settledRequests(server, "/redirect-to").first)
                    #expect(hop.requestHeaders["via"]?.contains("squid") == true)
                    let direct = try #require(await settledRequests(server, "/bytes/64K?seed=707").first)
                    #expect(direct.requestHeaders["via"] == nil)

                    let changed = try await engine.add(
                        .init(url: server.baseURL + "/scenario/squid-version/r1", destination: dir + "/b"))
                    #expect(
                        await engine.result(of: changed)
                            == .completed(
                                path: dir + "/b", sha256: expectedSHA256(size: 1 << 20, seed: 706, version: 2),
                                bytes: 1 << 20))
                    let gets = await settledRequests(server, "/scenario/squid-version/r1").sorted { $0.seq < $1.seq }
                    #expect(gets.count == 2)
                    #expect(gets.last?.requestHeaders["if-range"] != nil)
                    #expect(gets.last?.status == 200)
                }
            }
        }
    }
}

/// `rangefetch` behind squid, as a user runs it: `http_proxy=` and `--proxy`, `kill -9` and a rerun that resumes,
/// and a squid that refuses.
@Suite("rangefetch behind squid", .serialized)
struct SquidCLITests {
    /// Runs `rangefetch` on `url`, kills it with SIGKILL once its partial file holds 256 KiB, runs it again, and
    /// returns the server's GETs of `path` in the order they arrived.
    ///
    /// `path` must hold the body still past 256 KiB on its first request only (``stalledOnce(_:after:)``): the kill then
    /// lands mid-body however late the killer wakes up, where a paced body could finish first on a loaded machine.
    func killAndResume(
        _ server: RangeServer, url: String, path: String, size: Int, seed: UInt64, arguments: [String],
        environment: [Environment.Key: String?], dir: String
    ) async throws -> [JournalEntry] {
        let state = dir + "/.rangefetch"
        let all = [url, "-o", dir + "/out.bin", "--state", state] + arguments
        let first = try await startRangefetch(all, logs: dir + "/first", environment: environment)
        // An exit before the kill ends the wait too, so its output can say why.
        let process = first.process
        let killed = await kill(first, within: 60) {
            process.hasExited || partialFiles(state).contains { (fileSize($0) ?? 0) >= 256 << 10 }
        }
        let gets = requests(server, path).count
        let sizes = partialFiles(state).map { fileSize($0) ?? -1 }
        try #require(
            killed, "the partial file never reached 256 KiB; \(gets) GETs at the server, partial files \(sizes)")
        let status = try await first.wait()
        try #require(status == 128 + SIGKILL, "exited with \(status) before the kill: \(first.errors)")
        let second = try await startRangefetch(all, logs: dir + "/second", environment: environment)
        #expect(try await second.wait() == 0, "\(second.errors)")
        #expect(try sha256(ofFile: dir + "/out.bin") == expectedSHA256(size: size, seed: seed))
        // In arrival order: the killed run's stalled response can end after the rerun's, once squid gives it up.
        let journal = await settledRequests(server, path, timeout: .seconds(15)).sorted { $0.arrival < $1.arrival }
        try #require(journal.count >= 2, "two GETs in the journal")
        return journal
    }

    @Test("http_proxy= and --proxy through squid: http:// and https:// download, and resume after kill -9")
    func downloadsAndResumes() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let base = try #require(server.tlsBaseURL)
            let authority = try #require(server.certificateAuthorityPEM)
            let caFile = makeTemporaryDirectory() + "/ca.pem"
            try authority.write(toFile: caFile, atomically: true, encoding: .utf8)
            try await withSquid(.init(connectPorts: [port])) { squid in
                let size = 1 << 20
                let plain = stalledOnce("/bytes/1M?seed=711", after: 300 << 10)
                let gets = try await killAndResume(
                    server, url: server.baseURL + plain, path: plain, size: size, seed: 711, arguments: [],
                    environment: ["http_proxy": squid.url], dir: makeTemporaryDirectory())
                #expect(gets.count == 2)
                #expect(gets.last?.requestHeaders["range"]?.hasPrefix("bytes=") == true)
                #expect(gets.allSatisfy { $0.requestHeaders["via"]?.contains("squid") == true })

                let secure = stalledOnce("/bytes/1M?seed=712", after: 300 << 10)
                let tunnelled = try await killAndResume(
                    server, url: base + secure, path: secure, size: size, seed: 712,
                    arguments: ["--proxy", squid.url, "--cacert", caFile], environment: [:],
                    dir: makeTemporaryDirectory())
                #expect(tunnelled.count == 2)
                #expect(tunnelled.last?.requestHeaders["range"]?.hasPrefix("bytes=") == true)
                #expect(tunnelled.allSatisfy { $0.tls })
                // squid logs a tunnel when it closes, which can be just after rangefetch exited.
                try await eventually(.seconds(10), "two tunnels in squid's log") {
                    squid.accessLog.filter { $0.contains("CONNECT 127.0.0.1:\(port)") }.count >= 2
                }
                #expect(squid.accessLog.filter { $0.contains("CONNECT 127.0.0.1:\(port)") }.count == 2)
            }
        }
    }

    @Test("a squid that refuses: one line on stderr naming it and its 403, exit 2, no retry")
    func refusedNamesTheProxy() async throws {
        try await withRangeServer(tlsServerConfiguration()) { server in
            let base = try #require(server.tlsBaseURL)
            let port = try #require(server.tlsPort)
            try await withSquid { squid in
                let dir = makeTemporaryDirectory()
                let started = ContinuousClock.now
                let child = try await startRangefetch(
                    [base + "/bytes/1K", "-o", dir + "/out", "--insecure"], logs: dir + "/run",
                    environment: ["https_proxy": squid.url])
                #expect(try await child.wait() == 2)
                let lines = child.errors.split(separator: "\n")
                #expect(lines.count == 1, "\(child.errors)")
                #expect(
                    lines.first?.hasSuffix(
                        "HTTP 403 from proxy \(squid.authority): CONNECT 127.0.0.1:\(port) refused (ERR_ACCESS_DENIED)")
                        == true, "\(child.errors)")
                // A figure for the report, not an assertion: speed targets live in scripts/bench.
                print("rangefetch refused by squid (403) in \(ContinuousClock.now - started)")
                // squid logs the refusal when its transaction ends, which can be just after rangefetch exited.
                try await eventually(.seconds(10), "the refusal in squid's log") {
                    squid.accessLog.contains { $0.contains("TCP_DENIED/403") }
                }
                #expect(squid.accessLog.filter { $0.contains("TCP_DENIED/403") }.count == 1)
            }
        }
    }

    @Test("a squid that wants credentials: a 407 without them or with wrong ones, one line naming it, exit 2, no retry")
    func credentialsRefusedNamesTheProxy() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            try await withSquid(.init(authenticates: true)) { squid in
                let cases = [
                    (squid.url, "it wants credentials"),
                    ("http://\(Squid.user):wrong@\(squid.authority)", "it did not accept the credentials given"),
                ]
                for (proxy, reason) in cases {
                    let dir = makeTemporaryDirectory()
                    let started = ContinuousClock.now
                    let child = try await startRangefetch(
                        [server.baseURL + "/bytes/1K", "-o", dir + "/out"], logs: dir + "/run",
                        environment: ["http_proxy": proxy])
                    #expect(try await child.wait() == 2)
                    let lines = child.errors.split(separator: "\n")
                    #expect(lines.count == 1, "\(child.errors)")
                    #expect(
                        lines.first?.contains("HTTP 407 from proxy \(squid.authority): ") == true, "\(child.errors)")
                    #expect(lines.first?.contains(reason) == true, "\(child.errors)")
                    #expect(!child.errors.contains("wrong"))
                    // A figure for the report, not an assertion: speed targets live in scripts/bench.
                    print("rangefetch refused by squid (407, \(reason)) in \(ContinuousClock.now - started)")
                }
                // Each asked once: squid logs a refusal when its transaction ends, which can be just after the exit.
                try await eventually(.seconds(10), "two refusals in squid's log") {
                    squid.accessLog.filter { $0.contains("TCP_DENIED/407") }.count >= 2
                }
                #expect(squid.accessLog.filter { $0.contains("TCP_DENIED/407") }.count == 2)
                #expect(requests(server, "/bytes/").isEmpty)
            }
        }
    }
}
