import Foundation
import Testing

@testable import RangeServer

/// `/scenario/{name}/{run}[/{route}]` over the wire: attempt counting per run, steps, versions, redirects.
@Suite("Server scenarios over the wire")
struct ServerScenarioTests {
    /// A configuration whose scenarios come from `files` (name → JSON) written to a fresh directory, so these
    /// tests do not depend on the fixture scenarios still being edited.
    private func configuration(scenarios files: [String: String]) throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("scenarios")
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return Fixtures.configuration { $0.scenariosDirectory = directory }
    }

    private static let steps = """
        {
          "description": "Each attempt is different.",
          "resource": "/bytes/64K?seed=21",
          "attempts": [
            { "drop-after": "1K" },
            { "status": 503, "retry-after": 2 },
            { "version": 2 },
            { "drop-after": "2K" },
            {}
          ]
        }
        """

    @Test("scenarios handed over already parsed are served without reading the directory again")
    func parsedScenariosHandedOver() async throws {
        let loaded = try Scenario.loadDirectory(
            configuration(scenarios: ["steps.json": Self.steps]).scenariosDirectory!)
        var handed = Fixtures.configuration()
        // A directory that does not exist: reading it would fail the start.
        handed.scenariosDirectory = "/nonexistent/scenarios"
        handed.scenarios = loaded
        try await withRangeServer(handed) { server in
            let first = try await FaultWire.get(server, "/scenario/steps/h1")
            #expect(first.ending == .closed)
            #expect(first.body.count == 1024)
            #expect(try await FaultWire.get(server, "/scenario/steps/h1").status == 503)
        }
    }

    @Test("faults on the scenario URL layer over every step; resource parameters there are refused")
    func faultsOnTheScenarioURL() async throws {
        try await withRangeServer(configuration(scenarios: ["steps.json": Self.steps])) { server in
            // Attempt 1 drops after 1K by the script; the URL's own fault is stricter and wins.
            let first = try await FaultWire.get(server, "/scenario/steps/q1?drop-after=512")
            #expect(first.ending == .closed)
            #expect(first.body.count == 512)
            // Attempt 2 is a 503 by the script; the URL fault does not hide it.
            let second = try await FaultWire.get(server, "/scenario/steps/q1?drop-after=512")
            #expect(second.status == 503)
            let refused = try await FaultWire.get(server, "/scenario/steps/q2?seed=9")
            #expect(refused.status == 400)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("'seed'"))
            let entries = server.journal.entries(run: "q1")
            #expect(entries.first?.faults.contains("drop-after=512") == true)
            // The journal names the peer with its port.
            let peer = try #require(entries.first?.peer)
            #expect(peer.hasPrefix("127.0.0.1:"))
            #expect((Int(peer.dropFirst("127.0.0.1:".count)) ?? 0) > 0)
        }
    }

    @Test("the k-th GET gets attempts[k-1] and later GETs the last entry")
    func attemptsInOrder() async throws {
        try await withRangeServer(configuration(scenarios: ["steps.json": Self.steps])) { server in
            let url = "/scenario/steps/r1"
            let first = try await FaultWire.get(server, url)
            #expect(first.status == 200)
            #expect(first.ending == .closed)
            #expect(first.body.count == 1024)

            let second = try await FaultWire.get(server, url)
            #expect(second.status == 503)
            #expect(second.header("retry-after") == "2")

            let third = try await FaultWire.get(server, url)
            #expect(third.status == 200)
            #expect(third.body == FaultWire.expected(seed: 21, version: 2, count: 65_536))

            let fourth = try await FaultWire.get(server, url)
            #expect(fourth.ending == .closed)
            #expect(fourth.body.count == 2048)
            // The version set by attempt 3 stays in effect.
            #expect(fourth.body == FaultWire.expected(seed: 21, version: 2, count: 2048))

            for _ in 0..<2 {
                let later = try await FaultWire.get(server, url)
                #expect(later.status == 200)
                #expect(later.ending == .complete)
                #expect(later.body == FaultWire.expected(seed: 21, version: 2, count: 65_536))
            }
            let attempts = try await FaultWire.entries(server, target: url, count: 6).map(\.attempt)
            #expect(attempts == [1, 2, 3, 4, 5, 6])
        }
    }

    @Test("each run token has its own attempt counters")
    func runsAreIndependent() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let a1 = try await FaultWire.get(server, "/scenario/drop-then-resume/run-a")
            #expect(a1.body.count == 2_457_600)
            #expect(a1.ending == .closed)
            // Another run starts at attempt 1 whatever run-a did.
            let b1 = try await FaultWire.get(server, "/scenario/drop-then-resume/run-b")
            #expect(b1.body.count == 2_457_600)
            #expect(b1.ending == .closed)
            let a2 = try await FaultWire.get(server, "/scenario/drop-then-resume/run-a")
            #expect(a2.ending == .complete)
            #expect(a2.body.count == 8 << 20)

            let entries = await FaultWire.waitForJournal(server)
            #expect(entries.map(\.run) == ["run-a", "run-b", "run-a"])
            #expect(entries.map(\.attempt) == [1, 1, 2])
            #expect(entries.allSatisfy { $0.scenario == "drop-then-resume" && $0.route == "" })
        }
    }

    @Test("HEAD shows the next attempt's headers without counting as an attempt")
    func headDoesNotCount() async throws {
        try await withRangeServer(configuration(scenarios: ["steps.json": Self.steps])) { server in
            let url = "/scenario/steps/head-run"
            for _ in 0..<3 {
                let head = try await FaultWire.get(server, url, method: "HEAD")
                #expect(head.status == 200)
                #expect(head.header("content-length") == "65536")
            }
            let get = try await FaultWire.get(server, url)
            #expect(get.body.count == 1024, "the first GET is still attempt 1 (drop-after=1K)")
            let head = try await FaultWire.get(server, url, method: "HEAD")
            #expect(head.status == 503, "HEAD after one GET looks at attempt 2")
            let third = try await FaultWire.get(server, url)
            #expect(third.status == 503)

            let entries = try await FaultWire.entries(server, target: url, count: 6)
            #expect(entries.map(\.method) == ["HEAD", "HEAD", "HEAD", "GET", "HEAD", "GET"])
            #expect(entries.map(\.attempt) == [nil, nil, nil, 1, nil, 2])
        }
    }

    @Test("drop-then-resume: the resume with Range and If-Range completes the file")
    func dropThenResume() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let url = "/scenario/drop-then-resume/resume"
            let first = try await FaultWire.get(server, url)
            #expect(first.status == 200)
            #expect(first.header("content-length") == String(8 << 20))
            #expect(first.body == FaultWire.expected(seed: 2, count: 2_457_600))
            let etag = try #require(first.header("etag"))
            let rest = try await FaultWire.get(server, url, headers: ["Range": "bytes=2457600-", "If-Range": etag])
            #expect(rest.status == 206)
            #expect(rest.header("content-range") == "bytes 2457600-8388607/8388608")
            #expect(rest.body == FaultWire.expected(seed: 2, offset: 2_457_600, count: (8 << 20) - 2_457_600))
        }
    }

    @Test("a version step changes the bytes, the ETag and Last-Modified from then on")
    func versionChange() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let url = "/scenario/version-change/v"
            let first = try await FaultWire.get(server, url)
            #expect(first.body == FaultWire.expected(seed: 11, count: 1 << 20))
            let oldTag = try #require(first.header("etag"))
            let oldDate = try #require(first.header("last-modified"))

            // The resume's If-Range no longer matches: a 200 with the new version.
            let second = try await FaultWire.get(server, url, headers: ["Range": "bytes=1048576-", "If-Range": oldTag])
            #expect(second.status == 200)
            let newTag = try #require(second.header("etag"))
            #expect(newTag != oldTag)
            #expect(second.header("last-modified") != oldDate)
            #expect(second.body == FaultWire.expected(seed: 11, version: 2, count: 4 << 20))

            let third = try await FaultWire.get(server, url, headers: ["Range": "bytes=0-99", "If-Range": newTag])
            #expect(third.status == 206)
            #expect(third.header("etag") == newTag)
            #expect(third.body == FaultWire.expected(seed: 11, version: 2, count: 100))
        }
    }

    @Test("redirect steps answer with the step's code and a Location inside the same run")
    func redirectSteps() async throws {
        let scenario = """
            {
              "description": "Redirects.",
              "resource": "/bytes/8K?seed=22",
              "attempts": [
                { "redirect": "mirror", "redirect-code": 307 },
                { "redirect": "/files/hello.txt" }
              ],
              "routes": { "mirror": { "resource": "/bytes/4K?seed=23", "attempts": [] } }
            }
            """
        try await withRangeServer(configuration(scenarios: ["hops.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/hops/x")
            #expect(first.status == 307)
            let location = try #require(first.header("location"))
            #expect(location == "/scenario/hops/x/mirror")
            let mirror = try await FaultWire.get(server, location)
            #expect(mirror.status == 200)
            #expect(mirror.body == FaultWire.expected(seed: 23, count: 4096))

            let second = try await FaultWire.get(server, "/scenario/hops/x")
            #expect(second.status == 302)
            #expect(second.header("location") == "/files/hello.txt")

            let entries = await FaultWire.waitForJournal(server).sorted { $0.arrival < $1.arrival }
            #expect(entries.map(\.route) == ["", "mirror", ""])
            #expect(entries[0].faults == ["redirect=mirror"])
        }
    }

    @Test("expiring-redirect: signed URL drops, then 403; re-resolving gives a fresh URL that completes")
    func expiringRedirect() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let original = "/scenario/expiring-redirect/walk"
            let size = 4 << 20
            let dropped = 1536 * 1024

            let hop1 = try await FaultWire.get(server, original)
            #expect(hop1.status == 302)
            let signed1 = try #require(hop1.header("location"))
            #expect(signed1 == original + "/signed-1")

            let partial = try await FaultWire.get(server, signed1)
            #expect(partial.status == 200)
            #expect(partial.ending == .closed)
            #expect(partial.body == FaultWire.expected(seed: 18, count: dropped))
            let etag = try #require(partial.header("etag"))

            let expired = try await FaultWire.get(
                server, signed1, headers: ["Range": "bytes=\(dropped)-", "If-Range": etag]
            )
            #expect(expired.status == 403)

            let hop2 = try await FaultWire.get(server, original)
            #expect(hop2.status == 302)
            let signed2 = try #require(hop2.header("location"))
            #expect(signed2 == original + "/signed-2")

            let rest = try await FaultWire.get(
                server, signed2, headers: ["Range": "bytes=\(dropped)-", "If-Range": etag])
            #expect(rest.status == 206)
            #expect(rest.body == FaultWire.expected(seed: 18, offset: UInt64(dropped), count: size - dropped))

            let full = try await FaultWire.get(server, signed2)
            #expect(full.status == 200)
            #expect(full.body == FaultWire.expected(seed: 18, count: size))

            let entries = await FaultWire.waitForJournal(server)
            #expect(entries.map(\.route) == ["", "signed-1", "signed-1", "", "signed-2", "signed-2"])
            #expect(entries.map(\.attempt) == [1, 1, 2, 2, 1, 2])
            #expect(entries.map(\.outcome) == [.complete, .dropped, .complete, .complete, .complete, .complete])
        }
    }

    @Test("unknown scenarios and routes answer 404")
    func unknownNames() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let noScenario = try await FaultWire.get(server, "/scenario/no-such-scenario/r")
            #expect(noScenario.status == 404)
            let noRoute = try await FaultWire.get(server, "/scenario/plain/r/no-such-route")
            #expect(noRoute.status == 404)
        }
    }

    @Test("GET /_control/scenarios lists every scenario file")
    func listScenarios() async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Fixtures.scenarios)
            .filter { $0.hasSuffix(".json") && $0 != "schema.json" && !$0.hasPrefix(".") }
            .map { String($0.dropLast(5)) }
            .sorted()
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try await FaultWire.get(server, "/_control/scenarios")
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/json")
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            let items = try #require(object?["scenarios"] as? [[String: Any]])
            #expect(items.compactMap { $0["name"] as? String } == names)
            let expiring = try #require(items.first { $0["name"] as? String == "expiring-redirect" })
            #expect(expiring["routes"] as? [String] == ["", "signed-1", "signed-2"])
            #expect(expiring["resource"] as? String == "/bytes/4M?seed=18")
            #expect(expiring["url"] as? String == "/scenario/expiring-redirect/{run}")
            #expect((expiring["description"] as? String)?.isEmpty == false)
        }
    }

    @Test("a malformed scenario file stops start-up with an error naming the file and line")
    func malformedScenario() throws {
        let broken = """
            {
              "description": "Broken on line 4.",
              "resource": "/bytes/1K",
              "attempts": [ { "drop-after": "lots" } ]
            }
            """
        let configuration = try configuration(scenarios: ["good.json": Self.steps, "broken.json": broken])
        do {
            let server = try RangeServer.start(configuration)
            server.stop()
            Issue.record("start-up succeeded with a malformed scenario")
        } catch let error as RangeServerError {
            #expect(error.description.contains("broken.json:4"), "\(error)")
            #expect(error.description.contains("drop-after"), "\(error)")
        }

        let syntax = "{\n  \"description\": \"x\",\n  \"resource\": \"/bytes/1K\"\n  \"attempts\": []\n}\n"
        let syntaxConfiguration = try self.configuration(scenarios: ["syntax.json": syntax])
        #expect {
            try RangeServer.start(syntaxConfiguration).stop()
        } throws: { error in
            let text = String(describing: error)
            return text.contains("syntax.json:4")
        }
    }
}
