import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// The grades on a real run: the naive downloader splices two versions and reports success on `version-change`
/// (`corrupt`), and gets `drop-then-resume` right by luck, with a resume that would splice them (`unsafe`, naming
/// `version-change`).
@Suite(.serialized, .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
struct GradedVerdictTests {
    @Test("a naive downloader is graded corrupt on version-change")
    func naiveIsCorruptOnVersionChange() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run("version-change", try downloader.client("naive"))
        #expect(cell.result.isFailure)
        #expect(cell.grade == .corrupt, "\(cell.label): \(cell.result.reason) \(cell.reasons)")
        #expect(cell.label == "CORRUPT")
        #expect(cell.result.reason.hasPrefix("spliced versions"), "\(cell.result.reason)")
        #expect(cell.reasons.contains { $0.grade == .unsafe && $0.sibling == "version-change" }, "\(cell.reasons)")
    }

    @Test("a naive downloader is graded unsafe on drop-then-resume, naming version-change")
    func naiveIsUnsafeOnDropThenResume() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run("drop-then-resume", try downloader.client("naive"))
        #expect(cell.grade == .unsafe, "\(cell.label): \(cell.result.reason) \(cell.reasons)")
        #expect(cell.reasons.allSatisfy { $0.grade == .unsafe }, "\(cell.reasons)")
        #expect(cell.reasons.first?.sibling == "version-change")
        #expect(cell.result.reason.contains("corrupts the file in version-change"), "\(cell.result.reason)")
        let matrix = Matrix(scenarios: ["drop-then-resume"], clients: ["naive"], cells: [cell])
        #expect(matrix.summaries.first?.line == "naive: 0 pass, 0 corrupt, 1 unsafe, 0 fail, 0 costly, 0 n/a")
    }
}

/// `--baseline`: a client's CI adopts the matrix with the failures it has, and fails only when a cell gets worse.
@Suite(.serialized, .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
struct BaselineTests {
    @Test("a baseline: the same run exits 0, a row made worse exits 1 naming it, a row it lacks is new and exits 0")
    func baselineRuns() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let baseline = downloader.directory + "/baseline.json"
        func run(_ extra: [String]) async throws -> ChildProcess {
            let child = try await ChildProcess.start(
                BuiltProducts.rangecheck,
                [
                    "--client-command", downloader.specification("naive", mode: "naive"),
                    "--client", "naive", "--gate", "naive", "--scenario", "plain,drop-then-resume", "--quiet",
                ] + extra)
            _ = await child.wait(limit: .seconds(120))
            return child
        }
        // Day one: the naive downloader is unsafe on drop-then-resume, so the gate fails without a baseline.
        let first = try await run(["--json", baseline])
        #expect(await first.wait() == .exited(1), "\(first.output)\(first.errors)")
        #expect(first.output.contains("drop-then-resume  UNSAFE"), "\(first.output)")

        let same = try await run(["--baseline", baseline])
        #expect(await same.wait() == .exited(0), "\(same.output)\(same.errors)")
        #expect(same.output.contains("baseline \(baseline): 0 worse, 0 new, 0 fixed"), "\(same.output)")

        // The baseline says drop-then-resume passed: the run is worse there.
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: baseline))) as? [String: Any])
        let cells = try #require(document["cells"] as? [[String: Any]])
        func write(_ cells: [[String: Any]], to path: String) throws {
            var edited = document
            edited["cells"] = cells
            try JSONSerialization.data(withJSONObject: edited).write(to: URL(fileURLWithPath: path))
        }
        let better = downloader.directory + "/better.json"
        try write(
            cells.map { cell in
                guard cell["scenario"] as? String == "drop-then-resume" else { return cell }
                var passed = cell
                passed["result"] = "pass"
                passed["grade"] = "pass"
                return passed
            }, to: better)
        let worse = try await run(["--baseline", better])
        #expect(await worse.wait() == .exited(1), "\(worse.output)\(worse.errors)")
        #expect(
            worse.errors.contains("worse than the baseline: drop-then-resume × naive (pass → UNSAFE)"),
            "\(worse.errors)")
        #expect(worse.output.contains("worse drop-then-resume × naive: UNSAFE, worse than the baseline (was pass)"))

        // A baseline without the row (a scenario added since): listed as new, not failing.
        let older = downloader.directory + "/older.json"
        try write(cells.filter { $0["scenario"] as? String != "drop-then-resume" }, to: older)
        let added = try await run(["--baseline", older])
        #expect(await added.wait() == .exited(0), "\(added.output)\(added.errors)")
        #expect(
            added.output.contains("new drop-then-resume × naive: UNSAFE, new: not in the baseline"), "\(added.output)")
        #expect(added.output.contains("0 worse, 1 new, 0 fixed"))
    }

    @Test("a baseline that is not a report is a one-line usage error naming the file")
    func badBaseline() async throws {
        let path = NSTemporaryDirectory() + "not-a-report-\(UUID().uuidString).json"
        try Data("{\"cells\": 3}".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let child = try await ChildProcess.start(BuiltProducts.rangecheck, ["--baseline", path, "--scenario", "plain"])
        #expect(await child.wait(limit: .seconds(60)) == .exited(64))
        #expect(child.errors.contains("--baseline \(path): not a rangecheck --json report"), "\(child.errors)")
    }

    @Test("cells compare by grade; a report without grades reads its failures as fail")
    func comparison() throws {
        let old = Data(
            #"""
            {"scheme": "http", "cells": [
              {"scenario": "plain", "client": "curl", "result": "pass", "reason": ""},
              {"scenario": "version-change", "client": "curl", "result": "FAIL", "reason": "spliced"},
              {"scenario": "stall", "client": "curl", "result": "FAIL", "grade": "costly", "reason": "slow"},
              {"scenario": "cancel", "client": "curl", "result": "n/a", "reason": "cannot cancel"}
            ]}
            """#.utf8)
        let baseline = try Baseline.parse(old, path: "old.json")
        #expect(baseline.grades["version-change"]?["curl"] == .some(.fail))
        func cell(_ scenario: String, _ result: CellResult, _ grade: Grade? = nil) -> MatrixCell {
            MatrixCell(
                scenario: scenario, client: "curl", result: result,
                reasons: grade.map { [Violation("x", grade: $0)] } ?? [])
        }
        let matrix = Matrix(
            scenarios: ["plain", "version-change", "stall", "cancel", "new-row"], clients: ["curl"],
            cells: [
                cell("plain", .pass), cell("version-change", .fail("spliced"), .corrupt),
                cell("stall", .pass), cell("cancel", .fail("left"), .fail), cell("new-row", .fail("x"), .corrupt),
            ])
        let compared = baseline.compare(matrix)
        #expect(
            compared.cells.map(\.baseline) == [
                .same, .worse(was: .fail), .fixed(was: .costly), .worse(was: .pass), .new,
            ])
        #expect(compared.regressions(gating: ["curl"]).map(\.scenario) == ["version-change", "cancel"])
        #expect(compared.regressions(gating: ["curl"], threshold: .corrupt).map(\.scenario) == ["version-change"])
        #expect(compared.regressions(gating: ["engine"]).isEmpty)
        let markdown = Report.markdown(compared)
        #expect(markdown.contains("baseline old.json: 2 worse, 1 new, 1 fixed"), "\(markdown)")
        #expect(markdown.contains("**worse than the baseline (was FAIL)**"))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(compared).utf8)) as? [String: Any])
        #expect(json["baseline"] as? String == "old.json")
        let fixed = (json["cells"] as? [[String: Any]])?.first { $0["scenario"] as? String == "stall" }
        #expect((fixed?["baseline"] as? [String: Any])?["change"] as? String == "fixed")
        #expect(Report.html(compared).contains("<small class=\"baseline-new\">new: not in the baseline</small>"))
    }
}
