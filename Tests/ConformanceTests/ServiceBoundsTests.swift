import Conformance
import Foundation
import RangeServer
import Testing

/// `rangecheck serve` holds a bounded number of runs and report cells: a run unused for the expiry, or pushed out by
/// newer ones, answers 410 with one line saying why; `--results` still keeps every verdict.
@Suite("Conformance service bounds")
struct ServiceBoundsTests {
    private static func temporaryResults() throws -> (directory: URL, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return (directory, directory.appendingPathComponent("results.jsonl").path)
    }

    /// Expects a 410 whose one-line error contains `fragment`.
    private static func expectGone(_ answer: ServiceClient.Answer, _ fragment: String) {
        #expect(answer.status == 410, "\(answer.text)")
        let message = answer.object["error"] as? String ?? ""
        #expect(message.contains(fragment), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test("a run unused for the expiry answers 410 everywhere; a string that was never a token answers 404")
    func expiredRunIsGone() async throws {
        let clock = TestClock()
        try await withService({
            $0.clock = clock.read
            $0.runRetention = Retention(limit: 100, idleExpiry: .seconds(600))
        }) { service, server, client async throws in
            // The scenario counts of a run live as long as the run.
            #expect(server.configuration.runRetention.idleExpiry == .seconds(600))
            #expect(server.configuration.runRetention.limit == 100 * 12)
            let kept = try #require(try await client.createRun("plain", client: "kept")["run"] as? String)
            let idle = try await client.createRun("already-complete-416", client: "idle")
            let run = try #require(idle["run"] as? String)
            clock.advance(.seconds(599))
            #expect(try await client.send("GET", "/_conformance/runs/\(kept)").status == 200)
            clock.advance(.seconds(1))
            Self.expectGone(try await client.send("GET", "/_conformance/runs/\(run)"), "has expired: issued 600 s ago")
            Self.expectGone(
                try await client.send(
                    "POST", "/_conformance/runs/\(run)/result", json: ["outcome": "success", "outputs": []]),
                "a run unused for 600 s is forgotten")
            Self.expectGone(try await client.send("GET", "/_conformance/runs/\(run)/prefill"), "expired")
            #expect(try await client.send("GET", "/_conformance/runs/\(kept)").status == 200)
            #expect(service.heldRunCount == 1)
            let made = try await client.send("GET", "/_conformance/runs/plain-made-up-1-2-3")
            #expect(made.status == 404)
            #expect((made.object["error"] as? String)?.contains("no run 'plain-made-up-1-2-3'") == true)
            // One character changed: the check no longer matches, so it is not a token of this service.
            let forged = String(run.dropLast()) + (run.last == "0" ? "1" : "0")
            #expect(try await client.send("GET", "/_conformance/runs/\(forged)").status == 404)
        }
    }

    @Test("beyond the run limit the least recently used run is forgotten first, and says so")
    func runLimit() async throws {
        try await withService({ $0.runRetention = Retention(limit: 2, idleExpiry: .seconds(3600)) }) {
            service, _, client async throws in
            var runs: [String] = []
            for label in ["a", "b"] {
                runs.append(try #require(try await client.createRun("plain", client: label)["run"] as? String))
            }
            // `a` is used, so `b` is the oldest when `c` comes.
            #expect(try await client.send("GET", "/_conformance/runs/\(runs[0])").status == 200)
            runs.append(try #require(try await client.createRun("plain", client: "c")["run"] as? String))
            Self.expectGone(try await client.send("GET", "/_conformance/runs/\(runs[1])"), "pushed out by newer runs")
            #expect(try await client.send("GET", "/_conformance/runs/\(runs[0])").status == 200)
            #expect(try await client.send("GET", "/_conformance/runs/\(runs[2])").status == 200)
            #expect(service.heldRunCount == 2)
        }
    }

    @Test("a run pending when the service stopped answers 410 after the restart; judged runs stay judged")
    func pendingRunAcrossRestart() async throws {
        let (directory, results) = try Self.temporaryResults()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (pending, judged) = try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            let pending = try #require(try await client.createRun("plain", client: "left")["run"] as? String)
            let (judged, answer) = try await client.judgePlain(label: "done")
            #expect(answer.status == 200)
            return (pending, judged)
        }
        try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            Self.expectGone(
                try await client.send("GET", "/_conformance/runs/\(pending)"), "issued before this service started")
            let status = try await client.send("GET", "/_conformance/runs/\(judged)")
            #expect(status.object["state"] as? String == "judged")
        }
    }

    @Test("the live report holds at most --report-limit cells, the oldest leaving first; the file keeps every verdict")
    func reportLimit() async throws {
        let (directory, results) = try Self.temporaryResults()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withService({
            $0.resultsFile = results
            $0.reportLimit = 2
        }) { service, _, client async throws in
            for label in ["first", "second", "third"] {
                #expect(try await client.judgePlain(label: label).answer.status == 200)
            }
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.object["clients"] as? [String] == ["second", "third"])
            #expect(service.verdicts.map(\.client) == ["second", "third"])
        }
        let lines = try String(contentsOfFile: results, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        try await withService({
            $0.resultsFile = results
            $0.reportLimit = 2
        }) { _, _, client async throws in
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.object["clients"] as? [String] == ["second", "third"])
        }
    }

    @Test("bounds outside their ranges are refused at start with one line")
    func badBounds() throws {
        var configuration = ConformanceService.Configuration()
        configuration.scenariosDirectory = repositoryPath("fixtures/scenarios")
        configuration.filesRoot = repositoryPath("fixtures/files")
        configuration.runRetention = Retention(limit: 0, idleExpiry: .seconds(1))
        #expect(throws: ConformanceError.invalidArgument("--run-limit must be from 1 to 100000000, got 0")) {
            _ = try ConformanceService(configuration)
        }
        configuration.runRetention = Retention(limit: 1, idleExpiry: .seconds(1))
        configuration.reportLimit = 0
        #expect(throws: ConformanceError.invalidArgument("--report-limit must be from 1 to 100000000, got 0")) {
            _ = try ConformanceService(configuration)
        }
    }
}
