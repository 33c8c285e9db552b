import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// The matrix over HTTP/2 (`--scheme h2`, `h2c`): which rows run on which scheme, what a client's declared protocols
/// rule out, the judge's reading of the journal (a client that did not come over HTTP/2 is n/a, never a verdict),
/// and the engine, rangefetch and curl judged on the h2 rows.
@Suite("Matrix over HTTP/2")
struct HTTP2SchemeTests {
    static let catalogue: [CatalogueEntry] =
        (try? CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")) ?? []

    private func row(_ name: String) throws -> CatalogueEntry {
        try #require(Self.catalogue.first { $0.name == name }, "no row \(name)")
    }

    @Test("http-only runs over http alone, http1-only not over h2 or h2c, h2-only only over h2 and h2c")
    func tagsBySchemes() throws {
        let cases: [(String, Set<MatrixScheme>)] = [
            ("plain", [.http, .https, .h2, .h2c]), ("bad-chunk", [.http]), ("chunked-drop", [.http, .https]),
            ("tls-truncate", [.http, .https]), ("h2-reset-cancel", [.h2, .h2c]),
            ("h2-max-concurrent-streams", [.h2, .h2c]),
        ]
        for (name, runs) in cases {
            let entry = try row(name)
            for scheme in MatrixScheme.allCases {
                #expect((scheme.exclusion(of: entry) == nil) == runs.contains(scheme), "\(name) over \(scheme)")
            }
        }
        // Every row that uses a key HTTP/2 refuses is tagged so, and every row with an HTTP/2 key is h2-only.
        for entry in Self.catalogue {
            let text = try String(contentsOfFile: "fixtures/scenarios/\(entry.name).json", encoding: .utf8)
            let usesHTTP1Key = ["\"chunked\"", "chunked-with-length", "bad-chunk-after", "tls-truncate-after"]
                .contains { text.contains($0) }
            let usesHTTP2Key = ["rst-stream-after", "goaway", "max-concurrent-streams", "no-content-length"]
                .contains { text.contains($0) }
            #expect(!usesHTTP1Key || entry.expectation.tags.contains("http1-only"), "\(entry.name)")
            #expect(!usesHTTP2Key || entry.expectation.tags.contains("h2-only"), "\(entry.name)")
        }
        #expect(Self.catalogue.filter { $0.expectation.tags.contains("h2-only") }.count >= 12)
    }

    @Test("the judge reads the wire from the journal: requests not over HTTP/2 are n/a with why")
    func journalDecidesTheProtocol() {
        func entry(_ wire: String, alpn: String?) -> JournalEntry {
            JournalEntry(
                time: "2026-12-04T00:00:00.000Z", method: "GET", target: "/x", status: 200, bodyBytesPlanned: 1,
                bodyBytesSent: 1, outcome: .complete, connection: 1, peer: "127.0.0.1:1", httpProtocol: wire,
                stream: wire == "h2" ? 1 : nil, alpn: alpn)
        }
        #expect(Judge.http2Problem([entry("h2", alpn: "h2")], scheme: .h2) == nil)
        #expect(Judge.http2Problem([entry("h1", alpn: "http/1.1"), entry("h2", alpn: "h2")], scheme: .h2) == nil)
        let refused = Judge.http2Problem([entry("h1", alpn: "http/1.1")], scheme: .h2)
        #expect(refused == "did not negotiate h2 (ALPN chose http/1.1; its 1 request(s) came over HTTP/1.1)")
        #expect(Judge.http2Problem([], scheme: .h2c)?.contains("prior knowledge") == true)
        #expect(Judge.http2Problem([], scheme: .h2) == nil, "no request over TLS is the judge's to grade")
        #expect(Judge.http2Problem([entry("h1", alpn: nil)], scheme: .http) == nil)
    }

    @Test("definitions declare their protocols; one without h2 or h2c is n/a there, before it runs")
    func declaredProtocols() throws {
        let catalogue = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot)
        let curl = try #require(catalogue.client(named: "curl") as? SubprocessClient)
        #expect(
            curl.protocols == ["http/1.1", "h2", "h2c"] && curl.priorKnowledgeArguments == ["--http2-prior-knowledge"])
        #expect(curl.protocolLimitation(.h2) == nil && curl.protocolLimitation(.h2c) == nil)
        let wget = try #require(catalogue.client(named: "wget") as? SubprocessClient)
        #expect(wget.protocolLimitation(.h2) == "wget speaks HTTP/1.1 only (its protocols: http/1.1)")
        let wget2 = try #require(catalogue.client(named: "wget2") as? SubprocessClient)
        #expect(wget2.protocolLimitation(.h2) == nil && wget2.protocolLimitation(.h2c) != nil)
        #expect(EngineClient.make().protocolLimitation(.h2c)?.contains("AsyncHTTPClient has no h2c") == true)
        // The h2c words go first, only for an h2c job.
        var job = ClientJob(
            transfers: [.init(url: "http://127.0.0.1:9/scenario/s/r/", output: "/w/out")], stateDirectory: "/w/state",
            logDirectory: "/w/logs", concurrency: 1, idleTimeout: .seconds(5))
        #expect(curl.command(for: job)?.arguments.first != "--http2-prior-knowledge")
        job.scheme = .h2c
        #expect(curl.command(for: job)?.arguments.first == "--http2-prior-knowledge")
        // A mistake is one line at the key.
        for (member, message) in [
            (#""protocols": ["h3"]"#, "client.protocols: must be an array of http/1.1, h2 and h2c"),
            (#""protocols": ["h2c"]"#, "client.h2c-arguments: must be given exactly when protocols names h2c"),
        ] {
            let text = ClientDefinitionTests.minimal.replacingOccurrences(
                of: #""arguments": ["-o""#, with: member + #", "arguments": ["-o""#)
            do {
                _ = try ClientDefinitionTests.load(text)
                Issue.record("accepted \(member)")
            } catch let error as ConformanceError {
                #expect(error.message.contains(message) && !error.message.contains("\n"), "\(error.message)")
            }
        }
    }

    private static func server(_ scheme: MatrixScheme) -> RangeServer.Configuration {
        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
        configuration.scenariosDirectory = "fixtures/scenarios"
        configuration.threads = 8
        if scheme == .h2 { configuration.h2Port = 0 } else { configuration.h2cPort = 0 }
        return configuration
    }

    static let h2Rows = catalogue.filter { $0.expectation.tags.contains("h2-only") }.map(\.name)

    @Test("the engine passes every h2 row over h2", arguments: h2Rows)
    func engineOverH2(scenario: String) async throws {
        let entry = try row(scenario)
        var options = MatrixRunner.Options.forTests
        options.scheme = .h2
        let cell = try await withRangeServer(Self.server(.h2)) { server in
            await MatrixRunner.runPair(entry, client: EngineClient.make(), server: server, options: options)
        }
        // Under a sanitizer (a time scale over 1) the engine reads several times slower than the server writes, and
        // DATA read in the same batch as an RST_STREAM never reaches it: AsyncHTTPClient fails the request with the
        // parts it had not forwarded yet (docs/engine.md, "HTTP/2"). That is bytes or a request spent again, graded
        // costly; the instrumented run is for races, and the uninstrumented one holds the engine to the row's bounds.
        let slowReaderCost =
            testTimeScale > 1 && !cell.reasons.isEmpty && cell.reasons.allSatisfy { $0.grade == .costly }
        if slowReaderCost {
            print("\(scenario) over h2 at time scale \(testTimeScale): costly, not held to it: \(cell.result.reason)")
        } else {
            #expect(!cell.result.isFailure, "\(scenario): \(cell.result.reason)")
        }
        if case .notApplicable(let reason) = cell.result {
            #expect(reason.contains("prefilled"), "\(scenario) n/a: \(reason)")
        }
    }

    @Test("an HTTP/1.1-only client over h2 is n/a from the journal; over h2c, one without prior knowledge is n/a")
    func notOverHTTP2IsNotApplicable() async throws {
        let entry = try row("plain")
        let http1Only = try SubprocessClient.command(
            "rangefetch-h1=\(BuiltProducts.path(of: "rangefetch")) --http1.1 --cacert {cafile} --state {state} --output {output} {url}"
        )
        var options = MatrixRunner.Options.forTests
        options.scheme = .h2
        let cell = try await withRangeServer(Self.server(.h2)) { server in
            await MatrixRunner.runPair(entry, client: http1Only, server: server, options: options)
        }
        #expect(
            cell.result
                == .notApplicable("did not negotiate h2 (ALPN chose http/1.1; its 1 request(s) came over HTTP/1.1)"))
        options.scheme = .h2c
        let cleartext = try await withRangeServer(Self.server(.h2c)) { server in
            await MatrixRunner.runPair(entry, client: http1Only, server: server, options: options)
        }
        #expect(
            cleartext.result == .notApplicable("rangefetch-h1 cannot be asked for cleartext HTTP/2 (prior knowledge)"))
    }

    @Test("curl with --http2-prior-knowledge is judged over h2c", .enabled(if: BuiltProducts.onPath("curl") != nil))
    func curlOverH2C() async throws {
        let catalogue = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot)
        let curl = try #require(catalogue.client(named: "curl"))
        var options = MatrixRunner.Options.forTests
        options.scheme = .h2c
        for name in ["plain", "h2-refused-stream"] {
            let entry = try row(name)
            let cell = try await withRangeServer(Self.server(.h2c)) { server in
                let cell = await MatrixRunner.runPair(entry, client: curl, server: server, options: options)
                #expect(server.journal.entries().allSatisfy { $0.httpProtocol == "h2" && $0.alpn == nil })
                return cell
            }
            #expect(cell.result == .pass, "\(name): \(cell.result.reason)")
        }
    }
}

extension HTTP2SchemeTests {
    /// Downloads `url` with curl (`words` before it) and returns the bytes, or nil when curl failed.
    private static func curl(_ words: [String], _ url: String, into file: String) async throws -> Data? {
        let child = try await ChildProcess.start(
            try #require(BuiltProducts.onPath("curl")), ["-sS", "-o", file] + words + [url])
        guard case .exited(0) = await child.wait(limit: .seconds(scaled(seconds: 30))) else { return nil }
        return FileManager.default.contents(atPath: file)
    }

    @Test(
        "rangecheck serve hands out h2 and h2c URLs; a client that came over HTTP/1.1 is n/a, one over h2 is judged",
        .enabled(if: BuiltProducts.onPath("curl") != nil))
    func serviceSchemes() async throws {
        let directory = makeTestDirectory(prefix: "h2-service", label: "out")
        try await withService(server: {
            $0.h2Port = 0; $0.h2cPort = 0
        }) { _, server, client in
            let ca = try #require(server.certificateAuthorityPath)
            for (scheme, words, expected) in [
                ("h2", ["--http2", "--cacert", ca], "pass"), ("h2c", ["--http2-prior-knowledge"], "pass"),
                ("h2", ["--http1.1", "--cacert", ca], "n/a"),
            ] {
                let run = try await client.createRun("plain", client: "curl-\(scheme)", scheme: scheme)
                let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
                let port = try #require(scheme == "h2" ? server.h2Port : server.h2cPort)
                #expect(url.hasPrefix("\(scheme == "h2" ? "https" : "http")://127.0.0.1:\(port)/scenario/plain/"))
                #expect((run["ca"] != nil) == (scheme == "h2"))
                let data = try await Self.curl(words, url, into: directory + "/\(scheme)-\(expected).bin") ?? Data()
                let verdict = try await client.send(
                    "POST", try #require(run["result"] as? String),
                    json: [
                        "outcome": data.isEmpty ? "failure" : "success",
                        "outputs": [ServiceClient.output(route: "", data)], "steps-done": [],
                    ])
                #expect(verdict.object["result"] as? String == expected, "\(scheme) \(words): \(verdict.text)")
                if expected == "n/a" {
                    #expect((verdict.object["reason"] as? String)?.contains("did not negotiate h2") == true)
                }
            }
            // A row that does not run over the scheme is refused with one line.
            let refused = try await client.send(
                "POST", "/_conformance/runs", json: ["scenario": "h2-reset-cancel", "client": "c", "scheme": "https"])
            #expect(refused.status == 400 && refused.text.contains("works over HTTP/2 only"))
        }
    }
}
