import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// The live report of `rangecheck serve`: the matrix refreshes itself, every judged cell links to its run's picture,
/// and the pictures outlive a restart.
@Suite("Conformance service report")
struct ServiceReportTests {
    @Test("the live matrix refreshes and links each cell to its picture, which survives a restart")
    func livePictures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = directory.appendingPathComponent("results.jsonl").path
        try await withService({ $0.resultsFile = results }) { _, _, client in
            let verdict = try await client.judgeSplice(label: "naive client")
            // The API and the live page carry the grade: a spliced file reported as success is corrupt.
            #expect(verdict.object["grade"] as? String == "corrupt", "\(verdict.text)")
            #expect((verdict.object["reasons"] as? [[String: Any]])?.first?["grade"] as? String == "corrupt")
            let page = try await client.send("GET", "/_conformance/report")
            #expect(page.text.contains("<td class=\"corrupt\""), "\(page.text)")
            #expect(page.contentType.hasPrefix("text/html"))
            #expect(page.text.contains("http-equiv=\"refresh\""))
            #expect(page.text.contains("href=\"/_conformance/report/version-change/naive%20client\""), "\(page.text)")
            #expect(page.text.contains("If-Range no longer matches"))
        }
        try await withService({ $0.resultsFile = results }) { _, _, client in
            let detail = try await client.send("GET", "/_conformance/report/version-change/naive%20client")
            #expect(detail.status == 200)
            #expect(detail.text.contains("<svg"))
            #expect(detail.text.contains("spliced versions"))
            #expect(detail.text.contains("href=\"/_conformance/report\""))
        }
        // A verdict saved before grades existed reads back as `fail`.
        let saved = try String(contentsOfFile: results, encoding: .utf8)
        let ungraded = try saved.split(separator: "\n").map { line -> String in
            var object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            var verdict = try #require(object["verdict"] as? [String: Any])
            verdict["grade"] = nil
            verdict["reasons"] = nil
            object["verdict"] = verdict
            return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        try (ungraded.joined(separator: "\n") + "\n").write(toFile: results, atomically: true, encoding: .utf8)
        #expect(!ungraded.joined().contains("\"grade\""))
        try await withService({ $0.resultsFile = results }) { _, _, client in
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.text.contains("\"grade\" : \"fail\""), "\(report.text)")
        }
    }

    @Test("a failed verdict carries its reproducer: in the answer, on GET /_conformance/runs/{run}, on the run's page")
    func failedRunsCarryTheirReproducer() async throws {
        try await withService { _, _, client in
            let (run, answer) = try await client.judgePlain(label: "flipper", corrupt: true)
            #expect(answer.object["grade"] as? String == "corrupt", "\(answer.text)")
            let status = try await client.send("GET", "/_conformance/runs/\(run)")
            #expect(status.status == 200)
            #expect(status.object["state"] as? String == "judged")
            let verdict = try #require(status.object["verdict"] as? [String: Any], "\(status.text)")
            let reproducer = try #require(verdict["reproducer"] as? [String: Any], "\(status.text)")
            #expect(
                NSDictionary(dictionary: reproducer)
                    == NSDictionary(dictionary: answer.object["reproducer"] as? [String: Any] ?? [:]))
            // The service's catalogue on a rangeserver of the tester's own, the tester's client in words, what to
            // compare: the expected digest, the journal of this very run, what this run did.
            let server = try #require(reproducer["server"] as? String)
            #expect(
                server.hasPrefix("rangeserver --scenarios /") && server.contains("/fixtures/scenarios"), "\(server)")
            #expect(reproducer["clientIsCommand"] as? Bool == false)
            let words = try #require(reproducer["client"] as? String)
            #expect(
                words.hasPrefix(
                    "with flipper, as in the run: download http://127.0.0.1:8080/scenario/plain/\(run) to "), "\(words)"
            )
            let compare = try #require(reproducer["compare"] as? [String: Any])
            #expect((compare["sha256"] as? String)?.count == 64, "\(compare)")
            #expect((compare["journal"] as? String)?.contains("/_control/journal?run=\(run)&settled=2s") == true)
            #expect((compare["observed"] as? String)?.hasPrefix("bytes differ from version 1 at offset ") == true)
            // The run's page on the live report shows the same commands.
            let page = try await client.send("GET", "/_conformance/report/plain/flipper")
            #expect(page.status == 200)
            #expect(page.text.contains("<h3>Reproduce by hand</h3>"), "\(page.text)")
            #expect(page.text.contains("/scenario/plain/\(run)"))

            let passed = try await client.judgePlain(label: "copier")
            #expect(passed.answer.object["result"] as? String == "pass")
            let pass = try await client.send("GET", "/_conformance/runs/\(passed.run)")
            let passVerdict = try #require(pass.object["verdict"] as? [String: Any], "\(pass.text)")
            #expect(passVerdict["reproducer"] == nil)
        }
    }

    @Test("a token given in the address is kept in a cookie, so the report's links work in a browser")
    func tokenCookie() async throws {
        try await withService({ $0.token = "t0k" }) { _, _, client in
            var browser = client
            browser.token = nil
            let first = try await browser.send("GET", "/_conformance/report?token=t0k")
            #expect(first.status == 200)
            #expect(first.setCookie?.hasPrefix("rangecheck-token=t0k; Path=/_conformance/") == true)
            let next = try await browser.send("GET", "/_conformance/report?format=json", cookie: "rangecheck-token=t0k")
            #expect(next.status == 200)
            let wrong = try await browser.send("GET", "/_conformance/report", cookie: "rangecheck-token=nope")
            #expect(wrong.status == 401)
        }
    }

    @Test(
        "the live matrix and a run's picture render in headless Chromium without console errors",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "chromium is not installed"))
    func rendersInBrowser() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pages-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pages = try await withService { _, _, client in
            _ = try await client.judgeSplice(label: "browser")
            return [
                try await client.send("GET", "/_conformance/report").body,
                try await client.send("GET", "/_conformance/report/version-change/browser").body,
            ]
        }
        let files = try pages.enumerated().map { index, body in
            let path = directory.appendingPathComponent("page\(index).html").path
            try body.write(to: URL(fileURLWithPath: path))
            return path
        }
        let child = try await ChildProcess.start(repositoryPath("scripts/check-html"), files)
        let status = await child.wait(limit: .seconds(120))
        #expect(status == .exited(0), "\(child.output)\(child.errors)")
    }
}
