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

                engine: 1 pass, 0 corrupt, 0 unsafe, 1 fail, 0 costly, 0 n/a
                curl: 0 pass, 0 corrupt, 0 unsafe, 0 fail, 0 costly, 1 skipped, 1 n/a

                """)
    }

    @Test func markdownJUnitJSONAndHTMLCarryEveryCell() throws {
        let markdown = Report.markdown(Self.matrix)
        #expect(
            markdown.contains(
                "| stall | **FAIL**: took 31.000s, expected at most 25.000s | **n/a**: curl cannot pause and resume |"))
        let junit = Report.junit(Self.matrix)
        #expect(junit.contains("<testcase classname=\"rangecheck.engine\" name=\"plain\" time=\"0.120\"/>"))
        #expect(
            junit.contains("<failure type=\"fail\" message=\"FAIL: took 31.000s, expected at most 25.000s\"></failure>")
        )
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
        #expect(html.contains("<td class=\"fail\""))
        #expect(html.contains("rangecheck --scenario &apos;p*&apos;"))
    }

    /// curl's column as the judge grades it: a spliced file, a resume without a validator, a wasteful restart.
    static let graded = Matrix(
        scenarios: ["plain", "version-change", "drop-then-resume", "stall", "pause-resume"], clients: ["curl"],
        cells: [
            MatrixCell(scenario: "plain", client: "curl", result: .pass),
            MatrixCell(
                scenario: "version-change", client: "curl", result: .fail("spliced versions"),
                reasons: [
                    Violation("spliced versions", grade: .corrupt),
                    Violation(
                        "Range request without If-Range (expected \"v1\")", grade: .unsafe, sibling: "version-change"),
                ]),
            MatrixCell(
                scenario: "drop-then-resume", client: "curl", result: .fail("Range request without If-Range"),
                reasons: [Violation("Range request without If-Range", grade: .unsafe, sibling: "version-change")]),
            MatrixCell(scenario: "stall", client: "curl", result: .fail("timed out after 60.000s")),
            MatrixCell(
                scenario: "pause-resume", client: "curl", result: .fail("restarted from 0 instead of resuming at 5"),
                reasons: [Violation("restarted from 0 instead of resuming at 5", grade: .costly)]),
        ])

    @Test func everyReportShowsTheGradeOfEachCell() throws {
        let matrix = Self.graded
        #expect(matrix.cell(scenario: "stall", client: "curl")?.grade == .fail)
        #expect(matrix.cell(scenario: "version-change", client: "curl")?.grade == .corrupt)
        #expect(matrix.summaries.first?.line == "curl: 1 pass, 1 corrupt, 1 unsafe, 1 fail, 1 costly, 0 n/a")
        let terminal = Report.terminal(matrix)
        #expect(terminal.contains("version-change    CORRUPT\n"), "\(terminal)")
        #expect(terminal.contains("drop-then-resume  UNSAFE\n"))
        #expect(terminal.contains("pause-resume      COSTLY\n"))
        #expect(
            terminal.contains(
                "  unsafe: Range request without If-Range (expected \"v1\"); corrupts the file in version-change\n"))
        #expect(Report.markdown(matrix).contains("| drop-then-resume | **UNSAFE**: Range request without If-Range |"))
        #expect(Report.markdown(matrix).contains("Grades, worst first: CORRUPT"))
        let junit = Report.junit(matrix)
        #expect(junit.contains("<failure type=\"corrupt\" message=\"CORRUPT: spliced versions\">"))
        let html = Report.html(matrix)
        #expect(html.contains("<td class=\"corrupt\""))
        #expect(html.contains("<td class=\"unsafe\""))
        #expect(html.contains("<td class=\"costly\""))
        #expect(html.contains("td.corrupt{background:#8b0000"))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(matrix).utf8)) as? [String: Any])
        let cells = try #require(document["cells"] as? [[String: Any]])
        let unsafe = try #require(cells.first { $0["scenario"] as? String == "drop-then-resume" })
        // `result` keeps its meaning for the readers that predate grades.
        #expect(unsafe["result"] as? String == "FAIL" && unsafe["grade"] as? String == "unsafe")
        let reasons = try #require(unsafe["reasons"] as? [[String: Any]])
        #expect(reasons.first?["sibling"] as? String == "version-change")
        #expect(reasons.first?["grade"] as? String == "unsafe")
        let summary = try #require((document["summaries"] as? [[String: Any]])?.first)
        #expect((summary["graded"] as? [String: Int]) == ["corrupt": 1, "fail": 1, "unsafe": 1, "costly": 1])
    }

    @Test func theGateHoldsAtItsThreshold() {
        let matrix = Self.graded
        #expect(matrix.hasGatingFailure(gating: ["curl"]))
        #expect(matrix.hasGatingFailure(gating: ["curl"], threshold: .corrupt))
        var fixed = matrix
        fixed.cells.removeAll { $0.scenario == "version-change" }
        #expect(!fixed.hasGatingFailure(gating: ["curl"], threshold: .corrupt))
        #expect(fixed.hasGatingFailure(gating: ["curl"], threshold: .fail))
        fixed.cells.removeAll { $0.scenario == "stall" }
        #expect(!fixed.hasGatingFailure(gating: ["curl"], threshold: .fail))
        #expect(fixed.hasGatingFailure(gating: ["curl"], threshold: .unsafe))
        fixed.cells.removeAll { $0.scenario == "drop-then-resume" }
        #expect(!fixed.hasGatingFailure(gating: ["curl"], threshold: .unsafe))
        #expect(fixed.hasGatingFailure(gating: ["curl"]))
        #expect(!fixed.hasGatingFailure(gating: ["engine"]))
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
