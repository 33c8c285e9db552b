import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// The public results table (docs/results): recording reports into files, rendering the page and the README from
/// them, the bug report of a failed cell, and the bound on the directory's size.
@Suite("results table")
struct ResultsTableTests {
    /// The small table in fixtures/results: curl 7.88.1 (http and https) and 7.74.0 before it, the engine, two rows.
    static func fixture() throws -> ResultsTable {
        try ResultsTable.load(directory: repositoryPath("fixtures/results"))
    }

    @Test(
        "the page: newest version per client, rows with their references, cells linking to their run, a legend and a filter"
    )
    func page() throws {
        let page = ResultsPage.html(try Self.fixture())
        // The newest curl is the column; the older file only marks what changed.
        #expect(page.contains("curl<small>7.88.1</small>"))
        #expect(!page.contains("curl<small>7.74.0</small>"))
        // External downloaders first, this project's own last, marked.
        let curl = try #require(page.range(of: "curl<small>"))
        let engine = try #require(page.range(of: "engine<small>"))
        #expect(curl.lowerBound < engine.lowerBound)
        #expect(page.contains("<th scope=\"col\" class=\"own\" title=\"this project's own client\">engine"))
        // The row's description, RFC sections and reports, linked.
        #expect(page.contains("The file changes between the drop and the resume."))
        #expect(page.contains("<a href=\"https://www.rfc-editor.org/rfc/rfc9110#section-13.1.5\">RFC 9110 §13.1.5</a>"))
        #expect(page.contains("<a href=\"https://github.com/curl/curl/issues/1163\">curl/curl#1163</a>"))
        // A cell is its grade, linking to its run; the changed one says what it was.
        #expect(page.contains("<a href=\"#http/curl/version-change\">CORRUPT</a>"))
        #expect(page.contains("class=\"corrupt changed\""))
        #expect(page.contains("title=\"was FAIL in curl 7.74.0\""))
        #expect(!page.contains("class=\"pass changed\""))
        // The schemes recorded (h2 too), a legend of every grade, the filter; no switch to a scheme nothing ran.
        #expect(page.contains("id=\"table-http\"") && page.contains("id=\"table-https\" data-scheme=\"https\" hidden"))
        #expect(page.contains("id=\"table-h2\" data-scheme=\"h2\" hidden"))
        #expect(page.contains("<input type=\"radio\" name=\"scheme\" value=\"http\" checked> http</label>"))
        #expect(page.contains("<input type=\"radio\" name=\"scheme\" value=\"h2\"> h2</label>"))
        #expect(!page.contains("value=\"h2c\"") && !page.contains("table-h2c"))
        #expect(page.contains("<a href=\"#h2/curl/plain\">CORRUPT</a>"))
        #expect(page.contains("<caption>over h2 (not run over h2, so not shown: engine)</caption>"))
        for grade in ["CORRUPT", "FAIL", "UNSAFE", "COSTLY"] {
            #expect(page.contains("<span class=\"\(grade.lowercased())\">\(grade)</span>"))
        }
        #expect(page.contains("<select id=\"filter\""))
        #expect(page.contains("<option value=\"changed\">"))
        // Self-contained: nothing is loaded from anywhere (links to references are not loads).
        for load in ["src=", "<link", "@import", "url(http", "fetch("] { #expect(!page.contains(load), "\(load)") }
    }

    @Test(
        "a row n/a for every column leaves its scheme's table and is listed under it with why; each column's header has its counts, worst first, and its recipe"
    )
    func readersPage() throws {
        let table = try Self.fixture()
        // pause-resume: curl n/a ("needs a pause ..."), the engine did not run it.
        #expect(table.gradedScenarios(scheme: "http") == ["plain", "version-change"])
        #expect(table.notApplicableScenarios(scheme: "http").map(\.scenario) == ["pause-resume"])
        #expect(
            table.notApplicableScenarios(scheme: "http").first?.reasons == ["needs a pause, which curl cannot take"])
        #expect(table.notApplicableScenarios(scheme: "https").isEmpty)
        let page = ResultsPage.html(table)
        let start = try #require(page.range(of: "<table class=\"results\" id=\"table-http\""))
        let end = try #require(page.range(of: "</table>", range: start.upperBound..<page.endIndex))
        let http = String(page[start.lowerBound..<end.upperBound])
        let body = try #require(http.components(separatedBy: "<tbody>").last?.components(separatedBy: "</tbody>").first)
        #expect(!body.contains("pause-resume"))
        #expect(body.contains("version-change"))
        #expect(
            http.contains(
                "<tfoot><tr class=\"not-applicable\"><th scope=\"row\">n/a for every column</th><td colspan=\"2\">"
                    + "<span id=\"row-http-pause-resume\">pause-resume: needs a pause, which curl cannot take</span>"))
        // curl over http: 1 corrupt, 1 pass, 1 n/a, the corrupt count first; its recipe linked.
        #expect(
            http.contains(
                "curl<small>7.88.1</small><small class=\"counts\"><span class=\"corrupt\" title=\"corrupt\">1</span> "
                    + "<span class=\"pass\" title=\"pass\">1</span> <span class=\"na\" title=\"n/a\">1</span></small>"
                    + "<small class=\"recipe\"><a href=\"../conformance.md#each-columns-recipe-in-its-manuals-words\">"
                    + "recipe</a></small></th>"))
        #expect(http.contains("<a href=\"../engine.md\">recipe</a>"))
        // The README says the same.
        let readme = ResultsPage.markdown(table)
        #expect(!readme.contains("| [pause-resume](#pause-resume) |"))
        #expect(
            readme.contains(
                "n/a for every column over http, so not in the table:\n\n"
                    + "- [pause-resume](#pause-resume): needs a pause, which curl cannot take\n"))
        #expect(readme.contains("| [recipe](../conformance.md#each-columns-recipe-in-its-manuals-words) |"))
        // A reason that names its column is said once, for the columns that give it.
        func file(_ client: String, cancel: String) throws -> ResultsFile {
            let text = """
                {"format": 1, "client": "\(client)", "version": "1.0", "runs": {"http": {"recorded": "2026-12-03",
                "commit": "abc", "command": "rangecheck", "cells": [{"scenario": "cancel", "grade": "n/a",
                "reason": "\(cancel)"}, {"scenario": "plain", "grade": "pass"}]}}}
                """
            return try JSONDecoder().decode(ResultsFile.self, from: Data(text.utf8))
        }
        let every = ResultsTable(
            files: [try file("aa", cancel: "aa cannot cancel"), try file("bb", cancel: "bb cannot cancel")],
            rows: table.rows)
        #expect(every.notApplicableScenarios(scheme: "http").first?.reasons == ["cannot cancel (every column)"])
        let mixed = ResultsTable(
            files: [
                try file("aa", cancel: "aa cannot cancel"), try file("bb", cancel: "the row needs a pause"),
                try file("cc", cancel: "cc cannot cancel"),
            ],
            rows: table.rows)
        #expect(
            mixed.notApplicableScenarios(scheme: "http").first?.reasons == [
                "cannot cancel (aa, cc)", "the row needs a pause",
            ])
    }

    @Test("the page embeds each newest cell's trace and reproducer as data its script draws, and nothing older")
    func embeddedData() throws {
        let page = ResultsPage.html(try Self.fixture())
        let start = try #require(page.range(of: "<script type=\"application/json\" id=\"results-data\">"))
        let end = try #require(page.range(of: "</script>", range: start.upperBound..<page.endIndex))
        let json = String(page[start.upperBound..<end.lowerBound])
        let embedded = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        // Repeated strings are written once: {"$": N} is strings[N].
        let strings = try #require(embedded["strings"] as? [String])
        let keys = try #require(embedded["keys"] as? [String])
        #expect(strings.contains("/tmp/rangecheck-repro"))
        #expect(keys.contains("reproducer") && keys.contains("version-change"))
        // Every object key is its index in `keys`.
        func resolved(_ value: Any) -> Any {
            if let object = value as? [String: Any] {
                if object.count == 1, let index = object["$"] as? Int { return strings[index] }
                return Dictionary(uniqueKeysWithValues: object.map { (keys[Int($0.key)!], resolved($0.value)) })
            }
            if let array = value as? [Any] { return array.map(resolved) }
            return value
        }
        let data = try #require(resolved(embedded["data"] as Any) as? [String: Any])
        let clients = try #require(data["clients"] as? [String: [String: Any]])
        #expect(clients["curl"]?["version"] as? String == "7.88.1")
        let runs = try #require(clients["curl"]?["runs"] as? [String: [String: Any]])
        #expect(runs["http"]?["reproductions"] as? String == "/tmp/rangecheck-repro")
        let cell = try #require((runs["http"]?["cells"] as? [String: [String: Any]])?["version-change"])
        #expect(cell["grade"] as? String == "corrupt")
        #expect(cell["was"] as? String == "FAIL in curl 7.74.0")
        #expect(cell["run"] as? String == "curl-abc")
        let reproducer = try #require(cell["reproducer"] as? [String: Any])
        // Command lines as their words, so what a column's cells share is written once.
        #expect((reproducer["client"] as? [String])?.last == "http://127.0.0.1:8080/scenario/version-change/{run}")
        let trace = try #require(cell["trace"] as? [String: Any])
        #expect((trace["req"] as? [Any])?.count == 2)
        // No pre-rendered picture: the script draws it.
        #expect(!json.contains("<svg"))
        #expect(!page.contains("<svg"))
    }

    @Test("the README: the table in Markdown per scheme, the changed cell, the columns with versions and counts")
    func readme() throws {
        let readme = ResultsPage.markdown(try Self.fixture())
        #expect(readme.contains("| scenario (http) | curl 7.88.1 | engine abc123def456 |"))
        #expect(readme.contains("| [version-change](#version-change) | **CORRUPT** (was FAIL) | pass |"))
        #expect(readme.contains("| [plain](#plain) | pass | pass |"))
        // A scheme's table shows the columns run over it, and names the others.
        #expect(readme.contains("not run over https, so not shown: engine.\n\n| scenario (https) | curl 7.88.1 |\n"))
        #expect(readme.contains("| [plain](#plain) | pass |\n"))
        #expect(readme.contains("| scenario (h2) | curl 7.88.1 |\n"))
        #expect(readme.contains("| [plain](#plain) | **CORRUPT** |\n"))
        #expect(readme.contains("not run over h2, so not shown: engine."))
        #expect(readme.contains("| client | version | installed with | http | https | h2 | recipe |"))
        #expect(
            readme.contains(
                "| curl | 7.88.1 | `apt-get install curl` | 1 corrupt, 0 unsafe, 0 fail, 0 costly, 1 pass, 1 n/a"))
        #expect(readme.contains("| engine (ours) | abc123def456 |"))
        #expect(readme.contains("[RFC 9110 §14.2](https://www.rfc-editor.org/rfc/rfc9110#section-14.2)"))
        #expect(readme.contains("none (a baseline that cannot fail for a protocol reason)"))
        #expect(readme.contains("[index.html](index.html)"))
    }

    @Test("rendering is a function of the files: the same bytes whatever order they are read in")
    func deterministic() throws {
        let table = try Self.fixture()
        let reversed = ResultsTable(files: table.files.reversed(), rows: table.rows)
        #expect(ResultsPage.html(table) == ResultsPage.html(reversed))
        #expect(ResultsPage.markdown(table) == ResultsPage.markdown(reversed))
    }

    @Test("versions order by their numbers, so 7.10 is newer than 7.9; commits by the day recorded")
    func versionOrder() {
        #expect(ResultsTable.versionPrecedes("7.9.0", "7.10.0"))
        #expect(!ResultsTable.versionPrecedes("7.10.0", "7.9.0"))
        #expect(ResultsTable.versionPrecedes("2026.10.26", "2026.11.1"))
        #expect(ResultsTable.versionPrecedes("1.2", "1.2.1"))
        // This project's own columns are versioned by commit: the one recorded last is the newest.
        func engine(_ commit: String, recorded: String) -> ResultsFile {
            ResultsFile(
                client: "engine", version: commit,
                runs: ["http": .init(recorded: recorded, commit: commit, command: "rangecheck", cells: [])])
        }
        #expect(
            ResultsTable.precedes(engine("fff0000", recorded: "2026-01-01"), engine("0000aaa", recorded: "2026-02-01")))
        #expect(
            !ResultsTable.precedes(engine("0000aaa", recorded: "2026-02-01"), engine("fff0000", recorded: "2026-01-01"))
        )
    }

    @Test(
        "the bug report of a corrupt cell: versions, the build, the scenario file, the commands, the requests, the rule and the content map"
    )
    func bugReport() throws {
        let report = try BugReport.markdown(table: try Self.fixture(), client: "curl", scenario: "version-change")
        #expect(
            report.hasPrefix(
                "## curl 7.88.1: spliced versions: 0-1048575 v1, 1048576-4194303 v2 (version-change, http)"))
        #expect(report.contains("- curl 7.88.1 (`apt-get install curl`)"))
        #expect(report.contains("at commit `abc123def456`, recorded 2026-11-27"))
        #expect(report.contains("git checkout abc123def456"))
        #expect(report.contains("swift build --product rangeserver"))
        #expect(report.contains("```json\n{\n  \"name\": \"version-change\"\n}\n```"))
        #expect(
            report.contains(".build/debug/rangeserver --scenarios fixtures/scenarios --root fixtures/files --port 8080")
        )
        #expect(
            report.contains(
                "curl --continue-at - --output /tmp/rangecheck-repro/version-change/curl/out/version-change.bin"))
        #expect(
            report.contains(
                "| 1 | GET main URL | – | – | 200, \"b400000-b-v1\" | bytes 0-1048575 (1048576) | dropped (drop-after=1M) |"
            ))
        #expect(
            report.contains(
                "| 2 | GET main URL | bytes=1048576- | – | 206, \"b400000-b-v2\" | bytes 1048576-4194303 (3145728) | complete |"
            ))
        #expect(report.contains("- Every Range carries If-Range with the strong ETag of the kept bytes"))
        #expect(report.contains("[RFC 9110 §13.1.5](https://www.rfc-editor.org/rfc/rfc9110#section-13.1.5)"))
        #expect(report.contains("[curl/curl#1163](https://github.com/curl/curl/issues/1163)"))
        #expect(
            report.contains("  - 0-1048575: version 1\n  - 1048576-4194303: version 2\n  - spliced at offset 1048576"))
    }

    @Test("a bug report is refused for a cell that passed, a client or cell the table lacks, with one line naming it")
    func bugReportRefusals() throws {
        let table = try Self.fixture()
        #expect(throws: ConformanceError.self) {
            try BugReport.markdown(table: table, client: "curl", scenario: "plain")
        }
        do {
            _ = try BugReport.markdown(table: table, client: "wget", scenario: "plain")
            Issue.record("no error for an unknown client")
        } catch {
            #expect(error.message == "no results for client 'wget' (known: curl, engine)")
        }
        do {
            _ = try BugReport.markdown(table: table, client: "curl", scenario: "nope", scheme: "https")
            Issue.record("no error for an unknown cell")
        } catch {
            #expect(error.message == "curl 7.88.1 has no cell 'nope' over https")
        }
    }

    @Test(
        "rangecheck results report and render, as scripts/results runs them: the same text as the library's, a bad cell a usage error"
    )
    func commandLine() async throws {
        let fixtures = repositoryPath("fixtures/results")
        let report = try await ChildProcess.start(
            BuiltProducts.rangecheck,
            ["results", "report", "--client", "curl", "--scenario", "version-change", fixtures])
        #expect(await report.wait(limit: .seconds(60)) == .exited(0))
        #expect(
            report.output
                == (try BugReport.markdown(table: try Self.fixture(), client: "curl", scenario: "version-change")))
        let passed = try await ChildProcess.start(
            BuiltProducts.rangecheck, ["results", "report", "--client", "curl", "--scenario", "plain", fixtures])
        #expect(await passed.wait(limit: .seconds(60)) == .exited(64))
        #expect(passed.errors.contains("plain × curl over http is pass: there is nothing to report"))
        let directory = FileManager.default.temporaryDirectory.path + "/results-render-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.copyItem(atPath: fixtures, toPath: directory)
        let render = try await ChildProcess.start(BuiltProducts.rangecheck, ["results", "render", directory])
        #expect(await render.wait(limit: .seconds(60)) == .exited(0))
        let table = try Self.fixture()
        #expect(try String(contentsOfFile: "\(directory)/index.html", encoding: .utf8) == ResultsPage.html(table))
        #expect(try String(contentsOfFile: "\(directory)/README.md", encoding: .utf8) == ResultsPage.markdown(table))
    }

    @Test(
        "results --help is pinned: a changed interface is a visible change (fixtures/cli/rangecheck-results-help.txt)")
    func helpIsPinned() async throws {
        let child = try await ChildProcess.start(BuiltProducts.rangecheck, ["results", "--help"])
        #expect(await child.wait(limit: .seconds(60)) == .exited(0))
        let pinned = try String(
            contentsOfFile: repositoryPath("fixtures/cli/rangecheck-results-help.txt"), encoding: .utf8)
        #expect(child.output == pinned)
    }

    @Test(
        "a long run's trace keeps its first 40 and last 20 requests and says what went between, numbered as they were")
    func longRunIsCapped() throws {
        let requests = (0..<100).map { index in
            "{\"a\":\(index + 1),\"c\":\(index + 1),\"s\":\(index < 2 ? 206 : 416),\"t\":[\(index * 100),\(index * 100 + 1)]}"
        }
        let text = """
            {"exp":1,"len":1024,"vs":[1],"ms":9901,"out":[],"req":[\(requests.joined(separator: ","))]}
            """
        let long = try JSONDecoder().decode(CompactTrace.self, from: Data(text.utf8))
        #expect(long.omitted == nil)
        let capped = CompactTrace(long.runTrace(scenario: "length-longer", description: ""))
        #expect(capped.requests.count == 60)
        let omitted = try #require(capped.omitted)
        #expect(omitted.after == 40 && omitted.count == 40)
        #expect(omitted.statuses == ["416": 40] && omitted.time == [4000, 7901])
        let trace = capped.runTrace(scenario: "length-longer", description: "")
        #expect(trace.requests.map(\.order) == Array(1...40) + Array(81...100))
        let table = BugReport.requests(trace, omitted: capped.omitted)
        #expect(table.contains("| … | 40 more requests, left out of the record: statuses 416 × 40 |"))
        #expect(table.contains("| 81 | GET main URL |"))
    }

    @Test("recording: a --json-traces report becomes a file per client and version with paths relative to the checkout")
    func recording() throws {
        // A run's trace, as its compact form writes it (a dropped 200, then a 206 without If-Range).
        let compactText = """
            {"exp":1,"launches":true,"len":1024,"vs":[1],"ms":20,
             "out":[{"map":[[0,512,1],[512,1024,null]],"size":1024}],
             "req":[{"a":1,"c":1,"f":["drop-after=512"],"o":"dropped","p":1024,"s":200,"t":[0,10],"val":"\\"e\\"","v":1,"x":[0,512]},
                         {"a":2,"c":2,"l":2,"rg":"bytes=512-","s":206,"t":[12,20],"v":1,"x":[512,1024]}]}
            """
        let compact = try JSONDecoder().decode(CompactTrace.self, from: Data(compactText.utf8))
        let trace = compact.runTrace(scenario: "plain", description: "One plain download.")
        #expect(trace.requests.map(\.bodyBytesSent) == [512, 512])
        #expect(trace.requests.map(\.launch) == [1, 2])
        #expect(trace.requests[0].outcome == .dropped)
        #expect(trace.outputs[0].splices == [512])
        // What the compact form leaves out is told again: the span the Range asked for, the output's name.
        #expect(trace.requests[1].requested == [RunTrace.ByteSpan(start: 512, end: 1024)])
        #expect(trace.outputs[0].name == "plain.bin")
        #expect(CompactTrace(trace) == compact)
        var reproducer = try ReproducerTests.reproducer("plain", SubprocessClient.curl, run: "curl-tok3n")
        reproducer.server = "/repo/.build/results/bin/rangeserver --scenarios /repo/fixtures/scenarios --port 8080"
        reproducer.directory = "/tmp/rangecheck-repro/plain/curl"
        reproducer.client =
            "curl --output /tmp/rangecheck-repro/plain/curl/out/plain.bin http://h/scenario/plain/curl-tok3n"
        reproducer.kept = "/tmp/rangecheck.abc"
        reproducer.compare.observed = "spliced"
        var matrix = Matrix(
            scenarios: ["plain", "cancel"], clients: ["curl"],
            cells: [
                MatrixCell(
                    scenario: "plain", client: "curl", result: .fail("spliced"), elapsed: .milliseconds(300),
                    trace: trace, reasons: [Violation("spliced", grade: .corrupt)], reproducer: reproducer),
                MatrixCell(scenario: "cancel", client: "curl", result: .notApplicable("cannot cancel")),
            ], invocations: ["curl": "/repo/bin/curl -o OUTPUT URL"], command: "rangecheck --client curl",
            descriptions: ["plain": "One plain download."])
        matrix.versions = ["curl": "7.88.1"]
        let report = try ResultsRecorder.MatrixReport.decode(Data(Report.json(matrix, traces: true).utf8), path: "r")
        let existing = ResultsFile(
            client: "curl", version: "7.88.1",
            runs: ["https": .init(recorded: "2026-01-01", commit: "old", command: "c", cells: [])])
        let recorded = try ResultsRecorder.record(
            reports: [report], existing: [existing],
            recording: .init(
                commit: "abc", date: "2026-11-27", repositoryRoot: "/repo", products: "/repo/.build/results/bin"))
        let file = try #require(recorded.files.first)
        #expect(recorded.files.count == 1)
        #expect(file.fileName == "curl@7.88.1.json")
        // The https run recorded before is kept; http is added.
        #expect(file.runs.keys.sorted() == ["http", "https"])
        #expect(file.invocation == "bin/curl -o OUTPUT URL")
        let run = try #require(file.runs["http"])
        #expect(run.recorded == "2026-11-27" && run.commit == "abc")
        #expect(run.reproductions == "/tmp/rangecheck-repro")
        #expect(run.cells.map(\.grade) == ["corrupt", "n/a"])
        let cell = run.cells[0]
        #expect(cell.trace == compact)
        #expect(cell.run == "curl-tok3n")
        // Stored with the shared text as placeholders, whole again when read.
        #expect(cell.reproducer?.server == ".build/debug/rangeserver --scenarios fixtures/scenarios --port 8080")
        #expect(cell.reproducer?.client == "curl --output {dir}/out/plain.bin http://h/scenario/plain/{run}")
        #expect(cell.reproducer?.compare.observed == "")
        let whole = try #require(cell.reproducer(in: run, client: "curl"))
        #expect(
            whole.client
                == "curl --output /tmp/rangecheck-repro/plain/curl/out/plain.bin http://h/scenario/plain/curl-tok3n")
        #expect(whole.compare.journal.contains("run=curl-tok3n&"))
        #expect(whole.compare.observed == "spliced")
        #expect(whole.kept == nil)
        // Decoding the file's own text gives the file back.
        #expect(try ResultsFile.decode(Data(file.encoded().utf8), path: "f") == file)
        // An interrupted run is not recorded.
        matrix.interruption = "interrupted after 1 of 2 pairs"
        let interrupted = try ResultsRecorder.MatrixReport.decode(Data(Report.json(matrix).utf8), path: "i.json")
        #expect(throws: ConformanceError.self) {
            try ResultsRecorder.record(reports: [interrupted], existing: [], recording: .init(commit: "a", date: "d"))
        }
    }

    /// The committed table, read once for the tests that check it.
    static let committed = Result { try ResultsTable.load(directory: repositoryPath("docs/results")) }

    @Test("every corrupt cell of the committed table gives a bug report with the client's command and its requests")
    func everyCorruptCellHasAReport() throws {
        let table = try Self.committed.get()
        var reports = 0
        for column in table.columns where !column.isOwn {
            for (scheme, run) in column.file.runs {
                for cell in run.cells where cell.graded == .corrupt {
                    let report = try BugReport.markdown(
                        table: table, client: column.client, scenario: cell.scenario, scheme: scheme)
                    #expect(report.contains("### Steps to reproduce"), "\(column.client) \(cell.scenario)")
                    #expect(report.contains("# 3. the client"), "\(column.client) \(cell.scenario)")
                    // Its requests, or that none reached the server (a blackhole's connect never completes).
                    #expect(
                        report.contains("| # | request |") || report.contains("No request reached the server."),
                        "\(column.client) \(cell.scenario)")
                    #expect(!report.contains("{dir}") && !report.contains("{run}"), "\(column.client) \(cell.scenario)")
                    reports += 1
                }
            }
        }
        #expect(reports > 100)
    }

    @Test("docs/results stays under 10 MiB, and every results file there reads")
    func committedSizeBound() throws {
        let directory = repositoryPath("docs/results")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        var total: UInt64 = 0
        for name in names {
            let attributes = try FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")
            total += (attributes[.size] as? UInt64) ?? 0
        }
        #expect(total < 10 * 1024 * 1024, "docs/results holds \(total) bytes")
        let table = try Self.committed.get()
        #expect(table.columns.filter { !$0.isOwn }.count >= 10)
        // The committed page and README are what the committed files render to.
        let page = try String(contentsOfFile: "\(directory)/index.html", encoding: .utf8)
        let readme = try String(contentsOfFile: "\(directory)/README.md", encoding: .utf8)
        #expect(page == ResultsPage.html(table))
        #expect(readme == ResultsPage.markdown(table))
    }
}
