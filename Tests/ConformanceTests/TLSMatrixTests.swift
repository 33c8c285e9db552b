import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// A client that records the job it is given and reports failure at once.
private final class RecordingClient: ClientAdapter, @unchecked Sendable {
    let name = "recorder"
    let capabilities: ClientCapabilities = []
    let invocation = "records the job"
    private let lock = NSLock()
    private var recorded: [ClientJob] = []

    var jobs: [ClientJob] { lock.withLock { recorded } }

    func unavailableReason() async -> String? { nil }

    func start(_ job: ClientJob) async throws -> any ClientRun {
        lock.withLock { recorded.append(job) }
        return FinishedRun()
    }
}

private struct FinishedRun: ClientRun {
    func poll() async -> ClientExit? { .failure("recorded") }
    func terminate() async {}
}

/// The catalogue row `name` from fixtures/scenarios.
private func catalogueEntry(_ name: String) throws -> CatalogueEntry {
    try #require(
        try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files").first { $0.name == name })
}

/// A server with the catalogue's files and scenarios; with `tls`, a TLS port too.
private func catalogueServer(tls: Bool) -> RangeServer.Configuration {
    var configuration = RangeServer.Configuration()
    configuration.root = "fixtures/files"
    configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
    configuration.scenariosDirectory = "fixtures/scenarios"
    if tls { configuration.tlsPort = 0 }
    return configuration
}

/// The https matrix: the CA handed to every client, `{cafile}`, the `failure: tls` judgement, and `--tls` runs of
/// the engine column against a real server.
@Suite(.serialized) struct TLSMatrixTests {
    static let authority = "/tmp/rangecheck-test/ca.pem"

    static func job(authority: String? = Self.authority) -> ClientJob {
        var job = ClientJob(
            transfers: [ClientJob.Transfer(url: "https://127.0.0.1:1/x", output: "/tmp/out.bin")],
            stateDirectory: "/tmp/state", logDirectory: "/tmp/logs")
        job.certificateAuthorityFile = authority
        return job
    }

    /// A journal entry of a scenario run, answered with `status` and `location`.
    static func entry(_ seq: Int, status: Int, location: String? = nil) -> JournalEntry {
        JournalEntry(
            seq: seq, time: JournalEntry.timestamp(secondsSince1970: 1_800_000_000, milliseconds: seq), method: "GET",
            target: "/scenario/s/run", scenario: "s", run: "run", route: "", attempt: seq, status: status,
            responseHeaders: location.map { ["location": $0] } ?? [:], bodyBytesPlanned: 0, bodyBytesSent: 0,
            outcome: .complete, connection: seq, peer: "127.0.0.1:1", arrival: seq)
    }

    static func facts(_ entries: [JournalEntry], exit: ClientExit = .failure("exit 60")) -> RunFacts {
        RunFacts(
            entries: entries, outputs: [.missing("out.bin")], resourceLength: 1 << 20, expectedVersion: 1, exit: exit,
            elapsed: .seconds(1))
    }

    @Test func theBuiltInSubprocessClientsAreGivenTheCertificateAuthority() throws {
        let catalogue = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot)
        let expected: [String: String] = [
            "rangefetch": Self.authority, "curl": Self.authority, "wget": "--ca-certificate=\(Self.authority)",
            "wget2": "--ca-certificate=\(Self.authority)", "aria2c": "--ca-certificate=\(Self.authority)",
            "aria2c-x4": "--ca-certificate=\(Self.authority)",
        ]
        for (name, argument) in expected {
            let client = try #require(catalogue.client(named: name) as? SubprocessClient)
            let arguments = try client.arguments(Self.job())
            #expect(arguments.contains(argument), "\(name): \(arguments)")
            if name == "rangefetch" || name == "curl" {
                let flag = try #require(arguments.firstIndex(of: Self.authority)).advanced(by: -1)
                #expect(arguments[flag] == "--cacert", "\(name): \(arguments)")
            }
            #expect(client.tlsLimitation == nil)
            let without = try client.arguments(Self.job(authority: nil))
            #expect(!without.contains { $0.hasPrefix("--ca") }, "\(name): \(without)")
        }
        // axel has no CA option; OpenSSL's default trust paths read SSL_CERT_FILE.
        for name in ["axel", "axel-n4"] {
            let axel = try #require(catalogue.client(named: name) as? SubprocessClient)
            #expect(axel.environment(Self.job()) == ["SSL_CERT_FILE": Self.authority])
            #expect(axel.environment(Self.job(authority: nil)).isEmpty)
            #expect(axel.tlsLimitation == nil)
        }
    }

    @Test func aTemplateWithCafileGetsThePathAndOneWithoutIsNotApplicableOverTLS() throws {
        let client = try SubprocessClient.command("mytool=mytool --trust {cafile} -o {output} {url}")
        #expect(
            try client.arguments(Self.job())
                == ["--trust", Self.authority, "-o", "/tmp/out.bin", "https://127.0.0.1:1/x"])
        #expect(client.tlsLimitation == nil)
        let plain = try SubprocessClient.command("other=other -o {output} {url}")
        #expect(plain.tlsLimitation == "its template has no {cafile}")
    }

    @Test func everyClientIsGivenTheCAWheneverTheServerHasTLSEvenInAPlainRun() async throws {
        let entry = try catalogueEntry("tls-cert-expired")
        let configuration = catalogueServer(tls: false)
        let client = RecordingClient()
        let (authority, url) = try await withRangeServer(configuration) { server in
            _ = await MatrixRunner.runPair(entry, client: client, server: server, options: .forTests)
            return (server.certificateAuthorityPath, server.baseURL)
        }
        // No --tls: the server opened TLS for the rows redirecting to its TLS fault listeners.
        let job = try #require(client.jobs.first)
        #expect(authority != nil)
        #expect(job.certificateAuthorityFile == authority)
        #expect(job.transfers[0].url.hasPrefix(url + "/scenario/tls-cert-expired/"))
    }

    @Test func urlSessionIsNotApplicableOverTLSWithTheReason() async throws {
        let entry = try catalogueEntry("plain")
        let configuration = catalogueServer(tls: true)
        var options = MatrixRunner.Options.forTests
        options.tls = true
        let cell = try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(entry, client: URLSessionClient(), server: server, options: options)
        }
        #expect(
            cell.result
                == .notApplicable(
                    "over https urlsession cannot be given the server's CA: FoundationNetworking on Linux takes no "
                        + "custom CA (no server-trust challenge, no trust setting)"))
    }

    @Test func anHTTPOnlyRowIsNotApplicableOverTLS() async throws {
        let entry = try catalogueEntry("bad-chunk")
        #expect(entry.isHTTPOnly)
        let configuration = catalogueServer(tls: true)
        var options = MatrixRunner.Options.forTests
        options.tls = true
        let cell = try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(entry, client: EngineClient.make(), server: server, options: options)
        }
        #expect(cell.result == .notApplicable("the row's fault works on plain http only (tagged http-only)"))
    }

    @Test func aFailureAtTheTLSListenerIsJudgedFromTheRedirect() {
        let tls = ScenarioExpectation(outcome: .failure(kind: "tls"), leavesNoOutput: true)
        let redirected = [Self.entry(1, status: 302, location: "https://127.0.0.1:4443/bytes/1M")]
        #expect(Judge.violations(of: tls, in: Self.facts(redirected)) == [])
        #expect(
            Judge.violations(of: tls, in: Self.facts([]))
                == ["failed without any request, expected a redirect to https first"])
        #expect(
            Judge.violations(of: tls, in: Self.facts([Self.entry(1, status: 200)]))
                == ["failed after a 200 response, expected a redirect to https last"])
        #expect(
            Judge.violations(of: tls, in: Self.facts([Self.entry(1, status: 302, location: "http://h:1/x")]))
                == ["failed after a redirect to http://h:1/x, expected one to https"])
        // Accepting the bad certificate is the failure the rows are about.
        #expect(
            Judge.violations(of: tls, in: Self.facts(redirected, exit: .success))
                == ["client reported success where failure tls was expected"])
        #expect(ScenarioExpectation.isFailureKind("tls"))
    }

    @Test func theTLSRowsAreInTheCatalogue() throws {
        let catalogue = try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")
        let names = Set(catalogue.map(\.name))
        for row in [
            "tls-truncate", "tls-handshake-fail", "tls-handshake-stall", "tls-cert-expired", "tls-cert-wrong-host",
            "tls-cert-untrusted",
        ] {
            #expect(names.contains(row), "\(row) is missing")
        }
        for entry in catalogue where entry.name.hasPrefix("tls-") && entry.name != "tls-truncate" {
            #expect(entry.redirectsToTLS, "\(entry.name)")
            #expect(entry.expectation.outcome == .failure(kind: "tls"), "\(entry.name)")
            #expect(entry.expectation.leavesNoOutput && entry.expectation.maxRequests != nil, "\(entry.name)")
            #expect(entry.expectation.maxElapsed != nil, "\(entry.name)")
        }
    }

    @Test func theEngineColumnPassesOverHTTPS() async throws {
        var options = MatrixRunner.Options.forTests
        options.tls = true
        options.scenarioPattern = "plain,drop-then-resume,tls-*"
        options.command = "rangecheck --tls --client engine"
        let matrix = try await MatrixRunner.run(clients: [EngineClient.make()], options: options)
        #expect(matrix.scheme == "https")
        #expect(matrix.cells.count == 8)
        for cell in matrix.cells { #expect(cell.result == .pass, "\(cell.scenario): \(cell.result.reason)") }
        #expect(Report.terminal(matrix).hasPrefix("columns: engine\n\nscenario (https)"))
    }

    @Test func anHTTPSRunReachesTheTLSPort() async throws {
        let entry = try catalogueEntry("drop-then-resume")
        let configuration = catalogueServer(tls: true)
        var options = MatrixRunner.Options.forTests
        options.tls = true
        let (cell, entries) = try await withRangeServer(configuration) { server in
            let cell = await MatrixRunner.runPair(entry, client: EngineClient.make(), server: server, options: options)
            return (cell, server.journal.entries(scenario: "drop-then-resume"))
        }
        #expect(cell.result == .pass, "\(cell.result.reason)")
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { $0.tls })
    }
}
