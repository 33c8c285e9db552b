import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The engine's behaviours through the forward proxy (``ForwardProxy``), as they hold directly: TLS trust inside
/// tunnels, the connect timeout over the `CONNECT` and the handshake, the idle timeout, segments over several
/// tunnels, and the proxy's credentials kept out of logs and the state directory.
@Suite("Proxies: engine behaviours")
struct ProxyBehaviourTests {
    /// An engine through `proxy` trusting `server`'s CA, with `adjust` applied.
    func through(
        _ proxy: ForwardProxy, _ server: RangeServer, _ adjust: (inout DownloadConfiguration) -> Void = { _ in }
    ) -> DownloadConfiguration {
        testConfiguration {
            $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port))
            if let authority = server.certificateAuthorityPEM { $0.tls = .init(additionalCertificatesPEM: [authority]) }
            adjust(&$0)
        }
    }

    /// Runs `body` with the forward proxy and a TLS rangeserver, given the server's https base URL and TLS port.
    func withProxyAndTLSServer(
        _ body: (ForwardProxy, RangeServer, _ base: String, _ port: Int) async throws -> Void
    ) async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(tlsServerConfiguration()) { server in
                try await body(proxy, server, try #require(server.tlsBaseURL), try #require(server.tlsPort))
            }
        }
    }

    @Test("inside a tunnel the certificate is checked against the origin: by IP address and by name, faults refused")
    func trustInsideTunnels() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(tlsServerConfiguration(faults: true)) { server in
                let port = try #require(server.tlsPort)
                try await withEngine(on: server, through(proxy, server)) { server, engine, dir in
                    for (seed, base) in [(721, "https://127.0.0.1:\(port)"), (722, "https://localhost:\(port)")] {
                        let id = try await engine.add(
                            .init(url: base + "/bytes/64K?seed=\(seed)", destination: dir + "/\(seed)"))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(seed)", sha256: expectedSHA256(size: 64 << 10, seed: UInt64(seed)),
                                    bytes: 64 << 10))
                    }
                    for fault in [TLSFault.certWrongHost, .certUntrusted, .certExpired] {
                        let base = try #require(server.tlsFaultBaseURL(fault))
                        let faultPort = try #require(server.tlsFaultPorts[fault])
                        let id = try await engine.add(.init(url: base + "/bytes/1K", destination: dir + "/\(fault)"))
                        guard case .failed(let error) = await engine.result(of: id) else {
                            Issue.record("\(fault) did not fail")
                            continue
                        }
                        #expect(error.kind == "tls-certificate", "\(fault): \(error.message)")
                        #expect(error.message.contains("127.0.0.1:\(faultPort)"), "\(error.message)")
                    }
                    #expect(proxy.requests.allSatisfy { $0.line.hasPrefix("CONNECT ") })
                }
            }
        }
    }

    @Test("an IP-address origin's certificate is checked against that address, not the proxy's")
    func addressCheckedAgainstOrigin() async throws {
        // NIOSSL alone, given no server name (an IP address cannot be one), checks the certificate against the
        // channel's peer: in a tunnel, the proxy. The server's certificate names 127.0.0.1 and localhost.
        try await withRangeServer(tlsServerConfiguration()) { server in
            let port = try #require(server.tlsPort)
            // A proxy on 127.0.0.2 reaching the origin at 127.0.0.1: accepted, as the certificate names the origin.
            try await withForwardProxy(.init(host: "127.0.0.2")) { proxy in
                var configuration = through(proxy, server)
                configuration.proxy = .init(.init(host: "127.0.0.2", port: proxy.port))
                try await withEngine(on: server, configuration) { _, engine, dir in
                    let id = try await engine.add(
                        .init(url: "https://127.0.0.1:\(port)/bytes/1K?seed=727", destination: dir + "/a"))
                    #expect(
                        await engine.result(of: id)
                            == .completed(path: dir + "/a", sha256: expectedSHA256(size: 1024, seed: 727), bytes: 1024))
                }
            }
            // A proxy on 127.0.0.1 that sends the tunnel for 127.0.0.3 to 127.0.0.1: refused, as the certificate
            // does not name 127.0.0.3, although it names the proxy's address.
            try await withForwardProxy(.init(tunnelPort: port)) { proxy in
                try await withEngine(on: server, through(proxy, server)) { _, engine, dir in
                    let id = try await engine.add(
                        .init(url: "https://127.0.0.3:\(port)/bytes/1K", destination: dir + "/b"))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("did not fail")
                        return
                    }
                    #expect(
                        error.message
                            == "TLS certificate of 127.0.0.3:\(port) not accepted: it is not for this host name")
                    #expect(proxy.requests.map(\.line) == ["CONNECT 127.0.0.3:\(port) HTTP/1.1"])
                }
            }
        }
    }

    @Test("a proxy that accepts and never answers the CONNECT ends in the connect timeout, naming the proxy")
    func silentProxyTimesOut() async throws {
        try await withRangeServer(tlsServerConfiguration(faults: true)) { server in
            // The handshake-stall listener accepts and never says a word: as a proxy, it never answers.
            let silent = try #require(server.tlsFaultPorts[.handshakeStall])
            let configuration = testConfiguration {
                $0.proxy = .init(.init(host: "127.0.0.1", port: silent))
                $0.timeouts.connect = scaled(.milliseconds(500))
                $0.retry.maximumRetries = 0
            }
            try await withEngine(on: server, configuration) { server, engine, dir in
                let base = try #require(server.tlsBaseURL)
                let id = try await engine.add(.init(url: base + "/bytes/1K", destination: dir + "/a"))
                guard case .failed(let error) = await engine.result(of: id) else {
                    Issue.record("did not fail")
                    return
                }
                #expect(error.kind == "connect-timeout")
                #expect(error.message.hasSuffix("through proxy 127.0.0.1:\(silent)"), "\(error.message)")
            }
        }
    }

    @Test("a TLS handshake that stalls inside the tunnel ends in the connect timeout, as it does directly")
    func handshakeStallInsideTunnel() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(tlsServerConfiguration(faults: true)) { server in
                let configuration = through(proxy, server) {
                    $0.timeouts.connect = scaled(.seconds(1))
                    $0.retry.maximumRetries = 0
                }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    let base = try #require(server.tlsFaultBaseURL(.handshakeStall))
                    let id = try await engine.add(.init(url: base + "/bytes/1K", destination: dir + "/a"))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("did not fail")
                        return
                    }
                    #expect(error.kind == "connect-timeout")
                    // The handshake is where it stalls; on a machine loaded enough that the CONNECT itself took the
                    // whole second, the message names the proxy instead (seen once with the whole suite at once).
                    #expect(
                        error.message.hasSuffix("the TLS handshake did not finish")
                            || error.message.hasSuffix("through proxy 127.0.0.1:\(proxy.port)"), "\(error.message)")
                }
            }
        }
    }

    @Test("a body stalled behind the proxy hits the idle timeout and resumes from its offset")
    func idleTimeoutThroughProxy() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                // The first two responses stall after 100K for an hour (fault-seed 6 draws yes, yes, then no), so an
                // idle timeout must end the first stall and the resume from byte 102400 is asked for, even when a
                // loaded machine let the idle timeout pass before the first byte once (the first stall is then the
                // second response's, from zero). It was a 400 ms timeout against a 2 s stall, and a full run on a
                // loaded machine saw no ranged request at all: most likely the timeout before the first byte, then
                // none within the stall.
                let configuration = through(proxy, server) { $0.timeouts.idle = scaled(.seconds(1)) }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    let log = EventLog(engine.events())
                    let path = "/bytes/512K?seed=723&stall-after=100K&probability=0.5&fault-seed=6"
                    let id = try await engine.add(.init(url: server.baseURL + path, destination: dir + "/a"))
                    #expect(
                        await engine.result(of: id)
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 512 << 10, seed: 723), bytes: 512 << 10))
                    #expect(retryErrors(log, id).contains { DownloadError.idleTimeout ~= $0 })
                    let ranges = proxy.requests.compactMap { $0.headers["range"] }
                    #expect(ranges.first == "bytes=102400-", "\(ranges)")
                }
            }
        }
    }

    @Test("the overall deadline holds through the proxy: a slow http:// body and a stalled one in a tunnel end in it")
    func overallDeadlineThroughProxy() async throws {
        try await withProxyAndTLSServer { proxy, server, tls, tlsPort in
            // A deadline of five seconds against a body of about ten (100K/s for 1M) and one that stalls after 64K
            // for an hour, well inside the idle timeout: only the deadline can end them, and it ends both in seconds.
            // The deadline also bounds reaching the proxy at all, which a loaded machine (this module's tests all
            // started at once) took longer than one second to do in three runs of three, and longer than three in
            // two runs of three with three busy loops beside the tests on two cores.
            let configuration = through(proxy, server) { $0.timeouts.overall = scaled(.seconds(5)) }
            try await withEngine(on: server, configuration) { server, engine, dir in
                let downloads = [
                    ("http", server.baseURL + "/bytes/1M?seed=725&rate=\(paced(100))"),
                    ("https", tls + "/bytes/1M?seed=726&stall-after=64K"),
                ]
                for (name, url) in downloads {
                    let id = try await engine.add(.init(url: url, destination: dir + "/" + name))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("\(name) did not fail")
                        continue
                    }
                    #expect(DownloadError.deadlineExceeded ~= error, "\(name): \(error.message)")
                    #expect(!FileManager.default.fileExists(atPath: dir + "/" + name))
                }
                // Both went through the proxy: in absolute form for http://, in a tunnel for https://.
                let lines = proxy.requests.map(\.line)
                #expect(
                    lines.contains { $0.hasPrefix("GET \(server.baseURL)/bytes/1M?seed=725") }
                        && lines.contains("CONNECT 127.0.0.1:\(tlsPort) HTTP/1.1"), "\(lines)")
            }
        }
    }

    @Test("segments over https:// go through a tunnel each, all with Range and If-Range")
    func segmentsThroughTunnels() async throws {
        try await withProxyAndTLSServer { proxy, server, base, port in
            try await withEngine(on: server, through(proxy, server) { $0.connectionsPerFile = 4 }) {
                server, engine, dir in
                let id = try await engine.add(.init(url: base + "/bytes/8M?seed=724", destination: dir + "/a"))
                #expect(
                    await engine.result(of: id)
                        == .completed(
                            path: dir + "/a", sha256: expectedSHA256(size: 8 << 20, seed: 724), bytes: 8 << 20))
                let gets = await settledRequests(server, "/bytes/8M?seed=724")
                #expect(gets.count >= 4)
                #expect(gets.allSatisfy { $0.tls && $0.requestHeaders["range"] != nil })
                #expect(gets.dropFirst().allSatisfy { $0.requestHeaders["if-range"] != nil })
                // Segments run at once over tunnels of their own; the first request's tunnel, kept alive, may
                // carry a segment after it, so there are at least two, not necessarily four.
                let tunnels = proxy.requests.filter { $0.line == "CONNECT 127.0.0.1:\(port) HTTP/1.1" }
                #expect(tunnels.count >= 2, "\(proxy.requests.map(\.line))")
            }
        }
    }

    @Test("the proxy's credentials reach no log line and no file of the state directory")
    func credentialsNeverLoggedNorStored() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        try await withForwardProxy(.init(credentials: "Basic dTpodW50ZXIy")) { proxy in
            try await withRangeServer(tlsServerConfiguration()) { server in
                let base = try #require(server.tlsBaseURL)
                let configuration = through(proxy, server) {
                    $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port, username: "u", password: "hunter2"))
                    var logger = Logger(label: "proxy-test") { _ in CapturingLogHandler(lines) }
                    logger.logLevel = .trace
                    $0.logger = logger
                }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    for (seed, url) in [(725, server.baseURL), (726, base)] {
                        let id = try await engine.add(
                            .init(
                                url: url + "/bytes/300K?seed=\(seed)&drop-after=200K", destination: dir + "/\(seed)",
                                headers: [.proxyAuthorization: "Basic bm90LXN0b3JlZA=="]))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(seed)", sha256: expectedSHA256(size: 300 << 10, seed: UInt64(seed)),
                                    bytes: 300 << 10))
                    }
                    #expect(proxy.requests.count == 4)
                    #expect(proxy.requests.allSatisfy { $0.headers["proxy-authorization"] == "Basic dTpodW50ZXIy" })
                    #expect(
                        await settledRequests(server, "/bytes/300K").allSatisfy {
                            $0.requestHeaders["proxy-authorization"] == nil
                        })
                    var stored = ""
                    let state = dir + "/.rangefetch"
                    for file in try FileManager.default.subpathsOfDirectory(atPath: state) {
                        stored += (try? String(contentsOfFile: state + "/" + file, encoding: .utf8)) ?? ""
                    }
                    for secret in ["hunter2", "dTpodW50ZXIy", "bm90LXN0b3JlZA=="] {
                        #expect(!stored.contains(secret), "\(secret) in the state directory")
                    }
                }
            }
        }
        let logged = lines.withLockedValue { $0 }
        #expect(!logged.isEmpty)
        #expect(logged.allSatisfy { !$0.contains("hunter2") && !$0.contains("dTpodW50ZXIy") })
    }
}

extension ProxyBehaviourTests {
    @Test("a -H Proxy-Authorization is stored only when the request opts in, and goes to the proxy only")
    func proxyAuthorizationStoredWhenOptedIn() async throws {
        try await withForwardProxy(.init(credentials: "Basic dTpodW50ZXIy")) { proxy in
            try await withRangeServer(tlsServerConfiguration()) { server in
                let base = try #require(server.tlsBaseURL)
                try await withEngine(on: server, through(proxy, server)) { server, engine, dir in
                    for (seed, url, stores) in [(728, server.baseURL, true), (729, base, true), (730, base, false)] {
                        let id = try await engine.add(
                            .init(
                                url: url + "/bytes/16K?seed=\(seed)", destination: dir + "/\(seed)",
                                headers: [.proxyAuthorization: "Basic dTpodW50ZXIy"], storesCredentials: stores))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(seed)", sha256: expectedSHA256(size: 16 << 10, seed: UInt64(seed)),
                                    bytes: 16 << 10))
                        // The task's record: its file, or (a small task) its line in the task log.
                        let state = dir + "/.rangefetch"
                        var record = ""
                        for file in try FileManager.default.subpathsOfDirectory(atPath: state) {
                            let text = (try? String(contentsOfFile: state + "/" + file, encoding: .utf8)) ?? ""
                            record += text.split(separator: "\n").filter { $0.contains("\(id)") }.joined()
                        }
                        #expect(record.contains("\(id)"), "no record of seed \(seed)")
                        #expect(record.contains("dTpodW50ZXIy") == stores, "seed \(seed): \(record)")
                    }
                    // The GET of the http:// URL, and a CONNECT (the https:// downloads may share a kept-alive tunnel).
                    #expect(proxy.requests.filter { $0.line.hasPrefix("GET ") }.count == 1)
                    #expect(proxy.requests.contains { $0.line.hasPrefix("CONNECT ") })
                    #expect(proxy.requests.allSatisfy { $0.headers["proxy-authorization"] == "Basic dTpodW50ZXIy" })
                    #expect(
                        await settledRequests(server, "/bytes/16K").allSatisfy {
                            $0.requestHeaders["proxy-authorization"] == nil
                        })
                }
            }
        }
    }
}
