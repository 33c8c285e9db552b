import Conformance
import Foundation
import Testing

/// The reproducer as a pure function: the commands and words it gives for rows and clients of each kind.
@Suite("reproducer")
struct ReproducerTests {
    static let catalogue = Result { try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files") }

    static func entry(_ name: String) throws -> CatalogueEntry {
        try #require(try catalogue.get().first { $0.name == name }, "no scenario \(name)")
    }

    static let directory = "/tmp/repro/x"

    static func server(tls: Bool = false, authority: Bool = false) -> Reproducer.Server {
        var server = Reproducer.Server(scenariosDirectory: "/work/fixtures/scenarios", root: "/work/fixtures/files")
        server.tls = tls
        server.certificateAuthority = authority
        return server
    }

    /// The reproducer of `scenario` for a subprocess column, as the runner builds it.
    static func reproducer(
        _ scenario: String, _ client: any ClientAdapter, server: Reproducer.Server = server(), run: String = "curl-abc",
        sha256: String? = "ab12", kept: String? = nil
    ) throws -> Reproducer {
        let entry = try entry(scenario)
        let job = Reproducer.job(entry: entry, run: run, server: server, directory: directory)
        let command = try #require(client.command(for: job))
        return Reproducer.make(
            entry: entry, run: run, job: job, client: .command(command), server: server, directory: directory,
            expectedSHA256: sha256, observed: "spliced versions", kept: kept)
    }

    @Test("curl on version-change: the server, curl's exact command with the run's URL, the digest and the journal")
    func curlOnVersionChange() throws {
        let reproducer = try Self.reproducer("version-change", SubprocessClient.curl)
        #expect(
            reproducer.server
                == "rangeserver --scenarios /work/fixtures/scenarios --root /work/fixtures/files --port 8080")
        #expect(
            reproducer.setup == [
                "rm -rf /tmp/repro/x/out /tmp/repro/x/state && mkdir -p /tmp/repro/x/out /tmp/repro/x/state"
            ])
        #expect(
            reproducer.client
                == "curl --silent --show-error --fail --location --max-redirs 10 --continue-at - --retry 3 "
                + "--connect-timeout 5 --speed-limit 1 --speed-time 5 --output /tmp/repro/x/out/version-change.bin "
                + "http://127.0.0.1:8080/scenario/version-change/curl-abc")
        #expect(reproducer.clientIsCommand)
        // The harness's re-run after curl's one transient exit, by hand.
        #expect(
            reproducer.steps == [
                "whenever it exits 28, run the same client command again a second later (the harness does, up to 5 "
                    + "runs per start)"
            ])
        #expect(reproducer.compare.sha256 == "ab12")
        #expect(reproducer.compare.outputs == ["/tmp/repro/x/out/version-change.bin"])
        #expect(reproducer.compare.expected.hasPrefix("the client exits 0 and every output's SHA-256 is the one below"))
        #expect(reproducer.compare.expected.contains("version 2 of /bytes/4M?seed=11"))
        #expect(reproducer.compare.rules.contains { $0.contains("starts exactly at the bytes kept") })
        #expect(reproducer.compare.rules.contains { $0.contains("strong ETag") })
        #expect(
            reproducer.compare.journal == "curl -sS 'http://127.0.0.1:8080/_control/journal?run=curl-abc&settled=2s'")
        #expect(reproducer.compare.observed == "spliced versions")
        #expect(reproducer.kept == nil)
    }

    @Test("a kill-at step reads as kill -9 at its byte count, then the same command again")
    func killStep() throws {
        let reproducer = try Self.reproducer("kill-at-25", SubprocessClient.wget)
        #expect(reproducer.steps.count == 2)
        #expect(reproducer.steps.first?.hasPrefix("whenever it exits 4, ") == true)
        let step = try #require(reproducer.steps.last)
        #expect(step.hasPrefix("kill -9 the client once 25% (1048576 of 4194304 bytes) is on disk"), "\(step)")
        #expect(step.contains("du -scB1 /tmp/repro/x/out /tmp/repro/x/state | tail -n 1"))
        #expect(step.hasSuffix("then run the same client command again"))
        #expect(reproducer.compare.rules.contains { $0 == "at most 1M sent twice" })
    }

    @Test("the engine column gives the rangefetch command that runs the same engine; a pause is Ctrl-C")
    func engineIsRangefetch() throws {
        let reproducer = try Self.reproducer("pause-resume", EngineClient.make(connectionsPerFile: 4))
        #expect(reproducer.client.contains("rangefetch --state /tmp/repro/x/state"), "\(reproducer.client)")
        #expect(reproducer.client.contains("-x 4"))
        #expect(
            reproducer.client.hasSuffix(
                "--output /tmp/repro/x/out/pause-resume.bin http://127.0.0.1:8080/scenario/pause-resume/curl-abc"))
        #expect(reproducer.note?.contains("in-process engine (engine-x4)") == true)
        let step = try #require(reproducer.steps.first)
        #expect(step.hasPrefix("press Ctrl-C (SIGINT: it pauses and exits) once 40%"), "\(step)")
        #expect(step.contains("wait 1.000s, then run the same client command again"))
    }

    @Test("a prefill step is a ranged curl of the expected version into each output, in the setup")
    func prefill() throws {
        let reproducer = try Self.reproducer("416-no-content-range-prefilled", SubprocessClient.curl)
        #expect(reproducer.steps.count == 1, "only curl's re-run: the prefill is setup")
        #expect(reproducer.setup.count == 2)
        #expect(
            reproducer.setup[1].hasPrefix(
                "curl -sS -f -r 0-1048575 -o /tmp/repro/x/out/416-no-content-range-prefilled.bin "
                    + "'http://127.0.0.1:8080/bytes/1M?seed=42'"), "\(reproducer.setup[1])")
    }

    @Test("the resource of a later version names it")
    func resourceVersion() throws {
        let reproducer = try Self.reproducer("version-change", SubprocessClient.curl, sha256: nil)
        // Without a digest the server's own bytes are the reference.
        #expect(
            reproducer.compare.expected.contains(
                "curl -sS 'http://127.0.0.1:8080/bytes/4M?seed=11&version=2' | sha256sum"),
            "\(reproducer.compare.expected)")
        #expect(reproducer.compare.sha256 == nil)
    }

    @Test("over https: the TLS port, the CA directory, and the CA given to the client as it was in the run")
    func https() throws {
        let reproducer = try Self.reproducer(
            "version-change", SubprocessClient.curl, server: Self.server(tls: true, authority: true))
        #expect(reproducer.server.hasSuffix("--port 8080 --tls-port 8443 --tls-dir /tmp/repro/x/tls"))
        #expect(reproducer.client.contains("--cacert /tmp/repro/x/tls/ca.pem"))
        #expect(reproducer.client.hasSuffix("https://127.0.0.1:8443/scenario/version-change/curl-abc"))
        // The control API stays on the plain port.
        #expect(reproducer.compare.journal.contains("http://127.0.0.1:8080/_control/journal"))
    }

    @Test("a row sent to the blackhole opens it on its port; a failure row has no digest and says what it expects")
    func blackhole() throws {
        let reproducer = try Self.reproducer("blackhole-direct", SubprocessClient.curl)
        #expect(reproducer.server.hasSuffix("--port 8080 --blackhole-port 8081"))
        #expect(reproducer.client.hasSuffix("http://127.0.0.1:8081/scenario/blackhole-direct/curl-abc"))
        #expect(reproducer.client.contains("--connect-timeout 1 "), "the row's connect-timeout")
        #expect(reproducer.client.contains("--retry 1 "), "the row's retries")
        #expect(reproducer.compare.sha256 == nil)
        #expect(
            reproducer.compare.expected
                == "the client reports failure (any kind), and leaves no output file (an empty one is allowed)")
        #expect(reproducer.compare.rules == ["takes at most 30.000s"])
    }

    @Test("aria2c with several files: its input list is written in the setup, as the harness writes it")
    func aria2cInputList() throws {
        let reproducer = try Self.reproducer("many-files", SubprocessClient.aria2c)
        #expect(reproducer.client.contains("--input-file /tmp/repro/x/state/aria2c-input.txt"))
        let write = try #require(reproducer.setup.first { $0.hasPrefix("printf '%s' ") })
        #expect(write.hasSuffix("> /tmp/repro/x/state/aria2c-input.txt"))
        #expect(
            write.contains(
                "http://127.0.0.1:8080/scenario/many-files/curl-abc/f01\n  dir=/tmp/repro/x/out\n  out=f01\n"))
        #expect(reproducer.compare.outputs.count == 12)
        #expect(reproducer.compare.rules.contains("at most 3 connections at once"))
    }

    @Test("a tester's own client reads as what to fetch, in words")
    func remote() throws {
        let entry = try Self.entry("kill-at-25")
        let server = Self.server()
        let job = Reproducer.job(entry: entry, run: "phone-1", server: server, directory: "repro")
        let reproducer = Reproducer.make(
            entry: entry, run: "phone-1", job: job, client: .remote(label: "phone"), server: server,
            directory: "repro", expectedSHA256: nil, observed: "restarted")
        #expect(!reproducer.clientIsCommand)
        #expect(
            reproducer.client
                == "with phone, as in the run: download http://127.0.0.1:8080/scenario/kill-at-25/phone-1 to "
                + "repro/out/kill-at-25.bin")
        #expect(reproducer.steps.first?.hasPrefix("kill the client's process once 25%") == true)
    }

    @Test("words a shell would read otherwise are quoted, the environment comes first")
    func quoting() {
        let command = ClientCommand(
            program: "axel", arguments: ["--output=/tmp/a b", "http://h/x?a=1&b=2", "it's"],
            environment: ["SSL_CERT_FILE": "/tmp/ca.pem"])
        #expect(command.line == #"SSL_CERT_FILE=/tmp/ca.pem axel '--output=/tmp/a b' 'http://h/x?a=1&b=2' 'it'\''s'"#)
    }

    @Test("the reports show it: JSON as a structured field, Markdown folded, HTML in the detail, the kept directory")
    func rendered() throws {
        let reproducer = try Self.reproducer("kill-at-25", SubprocessClient.curl, kept: "/tmp/rangecheck.abc")
        var cell = MatrixCell(
            scenario: "kill-at-25", client: "curl", result: .fail("restarted <from zero>"), reproducer: reproducer)
        cell.trace = nil
        let matrix = Matrix(scenarios: ["kill-at-25"], clients: ["curl"], cells: [cell])

        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(matrix).utf8)) as? [String: Any])
        let cells = try #require(json["cells"] as? [[String: Any]])
        let field = try #require(cells.first?["reproducer"] as? [String: Any])
        #expect(field["server"] as? String == reproducer.server)
        #expect(field["client"] as? String == reproducer.client)
        #expect((field["steps"] as? [String])?.count == 2)
        #expect(field["kept"] as? String == "/tmp/rangecheck.abc")
        let compare = try #require(field["compare"] as? [String: Any])
        #expect(compare["journal"] as? String == reproducer.compare.journal)
        #expect(compare["sha256"] as? String == "ab12")

        let markdown = Report.markdown(matrix)
        #expect(markdown.contains("<details><summary>Reproduce kill-at-25 × curl (FAIL)</summary>\n\n```sh\n"))
        #expect(markdown.contains(reproducer.server + "\n"))
        #expect(
            markdown.contains("# the run's own outputs, client logs and journal.jsonl are kept in /tmp/rangecheck.abc"))

        let html = Report.detailHTML(cell, matrix: matrix)
        #expect(html.contains("<h3>Reproduce by hand</h3>"))
        #expect(html.contains("restarted &lt;from zero&gt;"))
        #expect(html.contains("/_control/journal?run=curl-abc&amp;settled=2s"))
        #expect(html.contains("<pre class=\"reproducer\"><code># 1. the server"))

        let script = Report.reproducerScript(reproducer)
        #expect(script.contains("#    kill -9 the client once 25%"))
        #expect(script.contains("#    expected SHA-256: ab12"))
        #expect(script.contains("sha256sum /tmp/repro/x/out/kill-at-25.bin"))
    }

    @Test("a passing cell has no reproducer in any report")
    func passHasNone() {
        let matrix = Matrix(
            scenarios: ["plain"], clients: ["curl"],
            cells: [MatrixCell(scenario: "plain", client: "curl", result: .pass)])
        #expect(!Report.json(matrix).contains("reproducer"))
        #expect(!Report.markdown(matrix).contains("<details>"))
    }

    @Test("a reproducer as JSON conforms to the API document's Reproducer schema, and one with a stray key does not")
    func conformsToTheDocument() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: repositoryPath("docs/conformance-api.json")))
        let check = JSONSchemaCheck(
            document: try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]))
        let schema = try #require(check.resolve("#/components/schemas/Reproducer"))
        for reproducer in [
            try Self.reproducer(
                "kill-at-25", SubprocessClient.curl, sha256: String(repeating: "a", count: 64), kept: "/k"),
            try Self.reproducer("blackhole-direct", SubprocessClient.wget),
        ] {
            var value = try #require(
                try JSONSerialization.jsonObject(with: JSONEncoder().encode(reproducer)) as? [String: Any])
            #expect(check.problems(value, schema).isEmpty, "\(check.problems(value, schema))")
            value["stray"] = 1
            #expect(!check.problems(value, schema).isEmpty)
        }
    }
}
