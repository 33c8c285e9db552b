import Conformance
import Foundation
import Testing

@Suite struct ReportTests {
    static let matrix = Matrix(
        scenarios: ["plain", "stall"], clients: ["engine", "curl"],
        cells: [
            MatrixCell(scenario: "plain", client: "engine", result: .pass, elapsed: .milliseconds(120)),
            MatrixCell(scenario: "plain", client: "curl", result: .skipped("curl is not installed")),
            MatrixCell(scenario: "stall", client: "engine", result: .fail("took 31.000s, expected at most 25.000s")),
            MatrixCell(scenario: "stall", client: "curl", result: .notApplicable("curl cannot pause and resume")),
        ],
        invocations: ["curl": "curl -C - -o OUTPUT URL"], command: "rangecheck --scenario 'p*'")

    @Test func theTerminalTableHasCellsReasonsAndSummaries() {
        #expect(
            Report.terminal(Self.matrix) == """
                columns: engine, curl

                scenario (http)  engine  curl
                ---------------  ------  -------
                plain            pass    skipped
                stall            FAIL    n/a

                skipped plain × curl: curl is not installed
                FAIL stall × engine: took 31.000s, expected at most 25.000s
                n/a stall × curl: curl cannot pause and resume

                engine: 1 passed, 1 failed, 0 skipped, 0 n/a
                curl: 0 passed, 0 failed, 1 skipped, 1 n/a

                """)
    }

    @Test func markdownJUnitJSONAndHTMLCarryEveryCell() throws {
        let markdown = Report.markdown(Self.matrix)
        #expect(
            markdown.contains(
                "| stall | **FAIL**: took 31.000s, expected at most 25.000s | **n/a**: curl cannot pause and resume |"))
        let junit = Report.junit(Self.matrix)
        #expect(junit.contains("<testcase classname=\"rangecheck.engine\" name=\"plain\" time=\"0.120\"/>"))
        #expect(junit.contains("<failure message=\"took 31.000s, expected at most 25.000s\"/>"))
        #expect(junit.components(separatedBy: "<testcase").count == 5)
        let json = Report.json(Self.matrix)
        #expect(json.hasSuffix("}\n"))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        #expect(document["command"] as? String == "rangecheck --scenario 'p*'")
        let summaries = try #require(document["summaries"] as? [[String: Any]])
        let engine = try #require(summaries.first { $0["client"] as? String == "engine" })
        #expect(engine["passed"] as? Int == 1 && engine["failed"] as? Int == 1)
        #expect(engine["skipped"] as? Int == 0 && engine["notApplicable"] as? Int == 0)
        let cells = try #require(document["cells"] as? [[String: Any]])
        #expect(cells.count == 4)
        #expect(cells.contains { $0["reason"] as? String == "took 31.000s, expected at most 25.000s" })
        #expect(cells.contains { $0["seconds"] as? Double == 0.12 })
        #expect(document["scheme"] as? String == "http")
        let html = Report.html(Self.matrix)
        #expect(html.contains("<td class=\"FAIL\""))
        #expect(html.contains("rangecheck --scenario &apos;p*&apos;"))
    }

    @Test func anHTTPSMatrixSaysSoInEveryReport() throws {
        var matrix = Self.matrix
        matrix.scheme = "https"
        #expect(Report.terminal(matrix).hasPrefix("columns: engine, curl\n\nscenario (https)  engine  curl\n"))
        #expect(
            Report.markdown(matrix).hasPrefix("Columns run: engine, curl\n\n| scenario (https) | engine | curl |\n"))
        let junit = Report.junit(matrix)
        #expect(junit.contains("<testsuites name=\"rangecheck-https\""))
        #expect(junit.contains("<testsuite name=\"engine-https\""))
        #expect(junit.contains("<testcase classname=\"rangecheck-https.engine\" name=\"plain\""))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(matrix).utf8)) as? [String: Any])
        #expect(document["scheme"] as? String == "https")
        let html = Report.html(matrix)
        #expect(html.contains("<title>rangecheck conformance matrix over https</title>"))
        #expect(html.contains("<tr><th>scenario (https)</th>"))
    }

    @Test func onlyGatingClientsFailTheRun() {
        #expect(Self.matrix.hasGatingFailure())
        let informational = Matrix(
            scenarios: ["plain"], clients: ["curl"],
            cells: [MatrixCell(scenario: "plain", client: "curl", result: .fail("x"))])
        #expect(!informational.hasGatingFailure())
    }

    @Test func shardsAreDisjointAndCoverEveryPair() throws {
        let scenarios = (1...7).map { "s\($0)" }
        let clients = ["engine", "curl", "wget"]
        var seen: [String] = []
        for index in 1...4 {
            let shard = try Shard(parsing: "\(index)/4")
            seen += shard.pairs(scenarios: scenarios, clients: clients).map { "\($0.scenario)/\($0.client)" }
        }
        #expect(seen.count == 21)
        #expect(Set(seen).count == 21)
        #expect(throws: ConformanceError.self) { try Shard(parsing: "5/4") }
        #expect(throws: ConformanceError.self) { try Shard(parsing: "0/2") }
    }

    @Test func globsMatchLikeAShell() {
        #expect(Glob.matches("kill-*", "kill-at-25"))
        #expect(Glob.matches("plain,stall", "stall"))
        #expect(Glob.matches("kill-at-[27]?", "kill-at-75"))
        #expect(!Glob.matches("kill-*", "plain"))
    }

    @Test func clientTemplatesSplitLikeAShell() throws {
        #expect(
            SubprocessClient.shellWords(#"tool --out "{output}" 'a b' c\ d"#) == [
                "tool", "--out", "{output}", "a b", "c d",
            ])
        #expect(SubprocessClient.shellWords("tool 'open") == nil)
        let client = try SubprocessClient.command("mytool=mytool --out {output} {url}")
        #expect(client.name == "mytool")
        #expect(client.capabilities.contains(.killAndRestart))
        #expect(throws: ConformanceError.self) { try SubprocessClient.command("=x {url}") }
        #expect(throws: ConformanceError.self) { try SubprocessClient.command("x=tool {output}") }
    }
}
