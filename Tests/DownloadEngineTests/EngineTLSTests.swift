import Foundation
import HTTPTypes
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The rangeserver of the TLS tests: the fixtures and a TLS port; with `faults`, a listener per ``TLSFault``.
func tlsServerConfiguration(faults: Bool = false, scenarios: String? = nil) -> RangeServer.Configuration {
    var configuration = fixturesServerConfiguration
    configuration.tlsPort = 0
    configuration.tlsFaults = faults
    configuration.scenariosDirectory = scenarios
    return configuration
}

/// Runs `body` with a TLS rangeserver and an engine that trusts its throwaway CA beside the system's roots (and
/// nothing else the server could present), on a fresh state directory; both are shut down after.
func withTLSEngine<T>(
    _ serverConfiguration: RangeServer.Configuration = tlsServerConfiguration(),
    _ adjust: (inout DownloadConfiguration) -> Void = { _ in },
    _ body: (RangeServer, DownloadEngine, String) async throws -> T
) async throws -> T {
    try await withRangeServer(serverConfiguration) { server in
        let authority = try #require(server.certificateAuthorityPEM)
        let configuration = testConfiguration {
            $0.tls = .init(additionalCertificatesPEM: [authority])
            adjust(&$0)
        }
        return try await withEngine(on: server, configuration, body)
    }
}

/// `url` as the value of a query parameter.
func queryEncoded(_ url: String) -> String {
    url.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
}

/// The errors of the `retrying` events of `id`, in order.
func retryErrors(_ log: EventLog, _ id: DownloadTaskID) -> [DownloadError] {
    log.all.compactMap { if case .retrying(id, _, _, let error) = $0 { error } else { nil } }
}

/// The engine over `https://` against the embedded rangeserver: bytes, resumes through the three ways a TLS
/// connection can end early, a version change, redirects across schemes, and each TLS fault.
@Suite("Engine over TLS")
struct EngineTLSTests {
    @Test("a download over https:// completes with the right bytes, by IP address and by host name")
    func completeDownload() async throws {
        try await withTLSEngine { server, engine, dir in
            let base = try #require(server.tlsBaseURL)
            let port = try #require(server.tlsPort)
            for (seed, url) in [(401, base), (402, "https://localhost:\(port)")] {
                let id = try await engine.add(
                    .init(url: url + "/bytes/1M?seed=\(seed)", destination: dir + "/\(seed).bin"))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/\(seed).bin", sha256: expectedSHA256(size: 1 << 20, seed: UInt64(seed)),
                            bytes: 1 << 20))
                let gets = await settledRequests(server, "/bytes/1M?seed=\(seed)")
                #expect(gets.count == 1)
                #expect(gets.allSatisfy { $0.tls && $0.status == 200 })
            }
        }
    }

    @Test(
        "drop-after (close_notify), reset-after (RST) and tls-truncate-after (no close_notify) resume over TLS",
        arguments: [(411, "drop-after=300K"), (412, "reset-after=300K"), (413, "tls-truncate-after=300K")])
    func resumesAfterEarlyEnd(seed: Int, fault: String) async throws {
        try await withTLSEngine { server, engine, dir in
            let log = EventLog(engine.events())
            let base = try #require(server.tlsBaseURL)
            let id = try await engine.add(
                .init(url: base + "/bytes/1M?seed=\(seed)&\(fault)", destination: dir + "/out"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/out", sha256: expectedSHA256(size: 1 << 20, seed: UInt64(seed)), bytes: 1 << 20))
            let gets = await settledRequests(server, "/bytes/1M?seed=\(seed)&").sorted { $0.seq < $1.seq }
            #expect(gets.allSatisfy { $0.tls })
            // Every byte before a clean (close_notify) or an unclean (TCP close) end arrives; an RST may discard some.
            try await expectRetriedFromOffset(
                gets, log: log, id: id, size: 1 << 20, cut: 300 << 10, everyByteArrives: !fault.hasPrefix("reset"),
                "TLS \(fault)")
            let errors = retryErrors(log, id)
            if fault.hasPrefix("tls-truncate") {
                #expect(gets.dropLast().allSatisfy { $0.outcome == .truncated })
            }
            // A cut is a network error whichever way it came, never a malformed response (three of which in a row
            // would end the task).
            #expect(errors.allSatisfy { $0.kind == "network" }, "\(errors)")
            print("TLS \(fault): retried after \(errors.map(\.message))")
        }
    }

    @Test("a chunked body cut by TCP without close_notify after its last byte is not complete: it is asked again")
    func truncationIsNeverComplete() async throws {
        try await withTLSEngine { server, engine, dir in
            let log = EventLog(engine.events())
            let base = try #require(server.tlsBaseURL)
            // Every byte and no last chunk, then a TCP close without close_notify.
            let path = "/bytes/256K?seed=414&chunked&tls-truncate-after=256K"
            let id = try await engine.add(.init(url: base + path, destination: dir + "/out"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/out", sha256: expectedSHA256(size: 256 << 10, seed: 414), bytes: 256 << 10))
            let gets = await settledRequests(server, path).sorted { $0.seq < $1.seq }
            #expect(gets.first?.outcome == .truncated)
            #expect(gets.count >= 2)
            #expect(gets.dropFirst().first?.requestHeaders["range"] == "bytes=262144-")
            #expect(retryErrors(log, id).first?.kind == "network")
            print("TLS truncated chunked body: \(retryErrors(log, id).map(\.message)); then \(gets.map(\.status))")
        }
    }

    @Test("a version change between attempts over TLS restarts from zero, never splices")
    func versionChangeRestarts() async throws {
        let scenarios = makeTemporaryDirectory()
        try """
        { "description": "Version change over TLS.", "resource": "/bytes/1M?seed=415",
          "attempts": [ { "drop-after": "300K" }, { "version": 2 } ] }
        """.write(toFile: scenarios + "/tls-version.json", atomically: true, encoding: .utf8)
        try await withTLSEngine(tlsServerConfiguration(scenarios: scenarios)) { server, engine, dir in
            let base = try #require(server.tlsBaseURL)
            let id = try await engine.add(.init(url: base + "/scenario/tls-version/r1", destination: dir + "/out"))
            let result = await engine.result(of: id)
            #expect(
                result
                    == .completed(
                        path: dir + "/out", sha256: expectedSHA256(size: 1 << 20, seed: 415, version: 2),
                        bytes: 1 << 20))
            let gets = await settledRequests(server, "/scenario/tls-version/r1").sorted { $0.seq < $1.seq }
            #expect(gets.count == 2)
            #expect(gets.allSatisfy { $0.tls })
            #expect(gets.last?.requestHeaders["range"] == "bytes=307200-")
            #expect(gets.last?.requestHeaders["if-range"] == gets.first?.responseHeaders["etag"])
            #expect(gets.last?.status == 200)
            #expect(gets.last?.responseHeaders["etag"] != gets.first?.responseHeaders["etag"])
        }
    }

    @Test("http→https and https→http redirects are followed; Authorization and Cookie cross neither, stay same-origin")
    func redirectsAcrossSchemes() async throws {
        let secrets: [(name: String, value: String)] = [("Authorization", "Bearer secret"), ("Cookie", "session=1")]
        try await withTLSEngine(tlsServerConfiguration(), { $0.headers = fields(secrets) }) { server, engine, dir in
            let secure = try #require(server.tlsBaseURL)
            let plain = server.baseURL
            let cases: [(seed: Int, from: String, to: String, crossOrigin: Bool)] = [
                (421, plain, secure, true), (422, secure, plain, true), (423, secure, secure, false),
            ]
            for (seed, from, to, crossOrigin) in cases {
                let target = to + "/bytes/64K?seed=\(seed)"
                let url = from + "/redirect-to?url=\(queryEncoded(target))&status_code=302"
                let id = try await engine.add(.init(url: url, destination: dir + "/\(seed)"))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/\(seed)", sha256: expectedSHA256(size: 64 << 10, seed: UInt64(seed)),
                            bytes: 64 << 10))
                #expect(await engine.snapshot(id)?.resolvedURL == target)
                let hop = try #require(await settledRequests(server, "/redirect-to?url=\(queryEncoded(target))").first)
                let landing = try #require(await settledRequests(server, "/bytes/64K?seed=\(seed)").first)
                #expect(hop.tls == from.hasPrefix("https:") && landing.tls == to.hasPrefix("https:"))
                #expect(hop.requestHeaders["authorization"] == "Bearer secret")
                #expect(hop.requestHeaders["cookie"] == "session=1")
                #expect(landing.requestHeaders["authorization"] == (crossOrigin ? nil : "Bearer secret"), "\(seed)")
                #expect(landing.requestHeaders["cookie"] == (crossOrigin ? nil : "session=1"), "\(seed)")
            }
        }
    }

    @Test(
        "a certificate fault fails at once, permanently, as tls-certificate naming the host",
        arguments: [TLSFault.certExpired, .certWrongHost, .certUntrusted])
    func certificateFaultFails(fault: TLSFault) async throws {
        try await withTLSEngine(tlsServerConfiguration(faults: true)) { server, engine, dir in
            let log = EventLog(engine.events())
            let base = try #require(server.tlsFaultBaseURL(fault))
            let port = try #require(server.tlsFaultPorts[fault])
            let started = ContinuousClock.now
            let id = try await engine.add(.init(url: base + "/bytes/64K", destination: dir + "/out"))
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            guard case .failed(let error) = result else {
                Issue.record("\(fault): expected a failure, got \(result)")
                return
            }
            print("TLS \(fault.rawValue): \(error.kind): \(error.message) after \(elapsed)")
            #expect(error.kind == "tls-certificate")
            #expect(DownloadError.tlsCertificate ~= error)
            #expect(!error.isRetryable)
            #expect(error.message.contains("127.0.0.1:\(port)"), "\(error.message)")
            // One attempt: no retry, so no backoff either.
            #expect(retryErrors(log, id).isEmpty)
            #expect(!log.states(id).contains(.retrying))
            // Bounded, not timed: alone it takes about 0.25 s, and a loaded CI machine running the whole suite at
            // once took 5.5 s; the single attempt is what the events above prove.
            #expect(elapsed < scaled(.seconds(30)))
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        }
    }

    @Test(".insecure accepts every certificate fault: expired, for another host, from an unknown CA")
    func insecureAcceptsAnyCertificate() async throws {
        try await withTLSEngine(tlsServerConfiguration(faults: true), { $0.tls = .insecure }) { server, engine, dir in
            for (seed, fault) in zip(431..., [TLSFault.certUntrusted, .certExpired, .certWrongHost]) {
                let base = try #require(server.tlsFaultBaseURL(fault))
                let id = try await engine.add(
                    .init(url: base + "/bytes/64K?seed=\(seed)", destination: dir + "/\(seed)"))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/\(seed)", sha256: expectedSHA256(size: 64 << 10, seed: UInt64(seed)),
                            bytes: 64 << 10), "\(fault)")
            }
        }
    }

    @Test("handshake-fail (an alert) is tls-handshake, retried within the policy, then the task fails")
    func handshakeFailRetriedThenFails() async throws {
        try await withTLSEngine(tlsServerConfiguration(faults: true), { $0.retry.maximumRetries = 2 }) {
            server, engine, dir in
            let log = EventLog(engine.events())
            let base = try #require(server.tlsFaultBaseURL(.handshakeFail))
            let port = try #require(server.tlsFaultPorts[.handshakeFail])
            let id = try await engine.add(.init(url: base + "/bytes/64K", destination: dir + "/out"))
            let result = await engine.result(of: id)
            guard case .failed(let error) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            print("TLS handshake-fail: \(error.kind): \(error.message)")
            #expect(DownloadError.retriesExhausted ~= error)
            #expect(error.message.contains("gave up after 2 retries"), "\(error.message)")
            #expect(error.message.contains("TLS handshake with 127.0.0.1:\(port) failed"), "\(error.message)")
            let errors = retryErrors(log, id)
            #expect(errors.count == 2)
            #expect(errors.allSatisfy { DownloadError.tlsHandshake ~= $0 }, "\(errors)")
        }
    }

    /// Downloads from the handshake-stall listener with one retry and `timeouts`' settings; returns the failure, how
    /// long it took and the retries' errors, or nil (recorded as an issue) when the download did not fail.
    func stalledHandshake(
        _ timeouts: @escaping (inout DownloadConfiguration.Timeouts) -> Void
    ) async throws -> (
        error: DownloadError, elapsed: Duration, retries: [DownloadError]
    )? {
        try await withTLSEngine(
            tlsServerConfiguration(faults: true),
            {
                timeouts(&$0.timeouts)
                $0.retry.maximumRetries = 1
            }
        ) { server, engine, dir in
            let log = EventLog(engine.events())
            let base = try #require(server.tlsFaultBaseURL(.handshakeStall))
            let started = ContinuousClock.now
            let id = try await engine.add(.init(url: base + "/bytes/64K", destination: dir + "/out"))
            let result = await engine.result(of: id)
            let elapsed = ContinuousClock.now - started
            guard case .failed(let error) = result else {
                Issue.record("expected a failure, got \(result)")
                return nil
            }
            return (error, elapsed, retryErrors(log, id))
        }
    }

    @Test("handshake-stall ends in the connect timeout, which covers the handshake, retried, bounded in time")
    func handshakeStallHitsConnectTimeout() async throws {
        let connect = scaled(.seconds(1))
        guard let (error, elapsed, retries) = try await stalledHandshake({ $0.connect = connect }) else { return }
        print("TLS handshake-stall (connect timeout): \(error.message) after \(elapsed)")
        #expect(DownloadError.retriesExhausted ~= error)
        #expect(error.message.contains("the TLS handshake did not finish"), "\(error.message)")
        #expect(retries.allSatisfy { DownloadError.connectTimeout ~= $0 })
        // Two handshakes of one connect timeout each; the bounds only say it waited for a timeout and ended (2.0 s
        // alone, 6.8 s on a loaded CI machine, but 1.92 s once under load, not explained: less than two full
        // timeouts), the retries' kind says which timeout ended it.
        #expect(elapsed >= connect)
        #expect(elapsed < connect * 2 + scaled(.seconds(30)))
    }

    @Test("handshake-stall with a connect timeout longer than the idle timeout ends in the idle timeout")
    func handshakeStallHitsIdleTimeout() async throws {
        let idle = scaled(.seconds(1))
        guard
            let (error, elapsed, retries) = try await stalledHandshake({
                $0.connect = scaled(.seconds(6))
                $0.idle = idle
            })
        else { return }
        print("TLS handshake-stall (idle timeout): \(error.message) after \(elapsed)")
        #expect(DownloadError.retriesExhausted ~= error)
        #expect(retries.allSatisfy { DownloadError.idleTimeout ~= $0 })
        // The retries' kind shows the idle timeout, not the 6 s connect timeout, ended each attempt; the upper bound
        // only says it ended (2.3 s alone, 6.7 s on a loaded CI machine).
        #expect(elapsed >= idle * 2)
        #expect(elapsed < scaled(.seconds(40)))
    }

    @Test("a CA file that does not exist or holds no PEM: one error naming the file, before any request")
    func badCAFile() async throws {
        let dir = makeTemporaryDirectory()
        try "not a certificate\n".write(toFile: dir + "/text.pem", atomically: true, encoding: .utf8)
        let cases = [(dir + "/missing.pem", "no such file"), (dir + "/text.pem", "no PEM certificate in it")]
        for (file, reason) in cases {
            let trust = DownloadConfiguration.TLSTrust(additionalCertificateFiles: [file])
            do {
                let engine = try DownloadEngine(
                    stateDirectory: dir + "/.rangefetch", configuration: testConfiguration { $0.tls = trust })
                await engine.shutdown()
                Issue.record("an engine was made with \(file)")
            } catch let error as DownloadError {
                #expect(error.message == "CA file '\(file)': \(reason)")
            }
            #expect(throws: DownloadError.self) { try trust.check() }
            // Unused with .insecure, still checked: a wrong path is a mistake either way.
            var insecure = trust
            insecure.acceptsAnyCertificate = true
            #expect(throws: DownloadError.self) { try insecure.check() }
        }
        #expect(throws: Never.self) { try DownloadConfiguration.TLSTrust.system.check() }
    }
}
