import Conformance
import Foundation
import RangeServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `rangecheck serve`'s API, driven over HTTP as a remote client would, with the journal and the reported block
/// digests as the witnesses the judge reads.
@Suite("Conformance service")
struct ServiceTests {
    @Test("a client that downloads plain whole passes; its verdict is in the report")
    func plainPasses() async throws {
        try await withService { service, _, client in
            let run = try await client.createRun("plain", client: "urlsession-test")
            let urls = try #require(run["urls"] as? [[String: Any]])
            #expect(urls.count == 1)
            let url = try #require(urls.first?["url"] as? String)
            #expect(url.hasPrefix(client.base + "/scenario/plain/"))
            let data = try await client.download(url)
            let verdict = try await client.send(
                "POST", try #require(run["result"] as? String),
                json: ["outcome": "success", "outputs": [ServiceClient.output(route: "", data)], "steps-done": []])
            #expect(verdict.status == 200)
            #expect(verdict.object["result"] as? String == "pass")
            #expect(verdict.object["scenario"] as? String == "plain")
            #expect(service.verdicts.map(\.result) == ["pass"])
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.contentType == "application/json")
            #expect(report.object["clients"] as? [String] == ["urlsession-test"])
        }
    }

    @Test("a splice is named from the reported blocks: v1 then v2 of version-change")
    func spliceNamed() async throws {
        try await withService { _, _, client in
            let verdict = try await client.judgeSplice(label: "splicer")
            #expect(verdict.object["result"] as? String == "fail")
            let reason = try #require(verdict.object["reason"] as? String)
            #expect(reason.contains("spliced versions: 0-1048575 v1, 1048576-4194303 v2"), "\(reason)")
        }
    }

    @Test("a step left out of steps-done makes the verdict n/a, never a pass")
    func missingStepIsNotApplicable() async throws {
        try await withService { _, _, client in
            for done in [[], ["kill-at"]] {
                let run = try await client.createRun("kill-at-25", client: "no-kill")
                let steps = try #require(run["steps"] as? [[String: Any]])
                #expect(steps.count == 1)
                #expect(steps.first?["kill-at"] as? String == "25%")
                #expect(steps.first?["bytes"] as? Int == 1 << 20)
                let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
                let data = try await client.download(url)
                let verdict = try await client.send(
                    "POST", try #require(run["result"] as? String),
                    json: [
                        "outcome": "success", "outputs": [ServiceClient.output(route: "", data)], "steps-done": done,
                    ])
                let result = verdict.object["result"] as? String
                if done.isEmpty {
                    #expect(result == "n/a")
                    #expect((verdict.object["reason"] as? String)?.contains("kill-at 25%") == true)
                } else {
                    #expect(result == "pass", "\(verdict.text)")
                }
            }
        }
    }

    @Test("bad input gets a 4xx with a one-line JSON error, and nothing judged is lost")
    func badInput() async throws {
        try await withService { service, _, client in
            func expectError(_ answer: ServiceClient.Answer, _ status: Int, _ fragment: String) {
                #expect(answer.status == status, "\(answer.text)")
                #expect(answer.contentType == "application/json")
                let message = answer.object["error"] as? String ?? ""
                #expect(message.contains(fragment), "\(message)")
                #expect(!message.contains("\n"))
            }
            expectError(try await client.send("POST", "/_conformance/runs", raw: "{not json"), 400, "not JSON")
            expectError(try await client.send("POST", "/_conformance/runs", json: ["client": "x"]), 400, "scenario")
            expectError(
                try await client.send("POST", "/_conformance/runs", json: ["scenario": "nope", "client": "x"]), 404,
                "unknown scenario 'nope'")
            expectError(
                try await client.send(
                    "POST", "/_conformance/runs", json: ["scenario": "plain", "client": "x", "scheme": "ftp"]),
                400, "scheme")
            expectError(
                try await client.send(
                    "POST", "/_conformance/runs/none/result", json: ["outcome": "success", "outputs": []]),
                404, "no run 'none'")
            let run = try await client.createRun("plain", client: "careful")
            let result = try #require(run["result"] as? String)
            let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
            let data = try await client.download(url)
            var output = ServiceClient.output(route: "", data)
            output["blocks"] = ["00"]
            expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [output]]), 400, "blocks")
            expectError(
                try await client.send(
                    "POST", result, json: ["outcome": "maybe", "outputs": [ServiceClient.output(route: "", data)]]),
                400, "outcome")
            // The refused reports kept nothing and did not use the run up.
            #expect(service.verdicts.isEmpty)
            let good = try await client.send(
                "POST", result, json: ["outcome": "success", "outputs": [ServiceClient.output(route: "", data)]])
            #expect(good.object["result"] as? String == "pass")
            expectError(
                try await client.send(
                    "POST", result, json: ["outcome": "failure", "outputs": [ServiceClient.output(route: "", data)]]),
                409, "already reported")
            #expect(service.verdicts.map(\.result) == ["pass"])
            expectError(try await client.send("DELETE", "/_conformance/runs"), 405, "DELETE")
            expectError(try await client.send("GET", "/_conformance/report?format=pdf"), 400, "pdf")
        }
    }

    @Test("verdicts survive a restart: the report is rebuilt from --results, and a judged run stays judged")
    func restartKeepsVerdicts() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = directory.appendingPathComponent("results.jsonl").path
        let judged = try await withService({ $0.resultsFile = results }) { _, _, client in
            let run = try await client.createRun("plain", client: "first life")
            let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
            let data = try await client.download(url)
            let answer = try await client.send(
                "POST", try #require(run["result"] as? String),
                json: ["outcome": "success", "outputs": [ServiceClient.output(route: "", data)]])
            #expect(answer.status == 200)
            return try #require(run["run"] as? String)
        }
        try await withService({ $0.resultsFile = results }) { service, _, client in
            #expect(service.verdicts.map(\.run) == [judged])
            let markdown = try await client.send("GET", "/_conformance/report?format=markdown")
            #expect(markdown.text.contains("| plain[^plain] | pass |"))
            let status = try await client.send("GET", "/_conformance/runs/\(judged)")
            #expect(status.object["state"] as? String == "judged")
            let again = try await client.send(
                "POST", "/_conformance/runs/\(judged)/result", json: ["outcome": "success", "outputs": []])
            #expect(again.status == 409)
        }
    }

    @Test("with a token, the API needs it (header or query); without one, only loopback peers are answered")
    func accessControl() async throws {
        try await withService({ $0.token = "s3cret" }) { _, server, client in
            var anonymous = client
            anonymous.token = nil
            let refused = try await anonymous.send("GET", "/_conformance/scenarios")
            #expect(refused.status == 401)
            #expect(try await client.send("GET", "/_conformance/scenarios").status == 200)
            #expect(try await anonymous.send("GET", "/_conformance/report?token=s3cret").status == 200)
            // The scenario URLs themselves need no token: clients download them with whatever they use.
            #expect(try await anonymous.send("GET", server.baseURL + "/healthz").status == 200)
        }
        try await withService { service, _, _ in
            let remote = await service.handle(
                CustomRoute.Request(method: "GET", path: "/_conformance/scenarios", peerAddress: "192.0.2.7"))
            #expect(remote.status == 403)
        }
    }

    @Test("a prefill step hands out the bytes to put in place, and the judge counts them as kept")
    func prefill() async throws {
        try await withService { _, _, client in
            let run = try await client.createRun("already-complete-416", client: "prefiller")
            let step = try #require((run["steps"] as? [[String: Any]])?.first)
            #expect(step["prefill"] as? String == "100%")
            #expect(step["bytes"] as? Int == 1 << 20)
            let prefillURL = try #require((step["urls"] as? [[String: Any]])?.first?["url"] as? String)
            let bytes = try await client.send("GET", prefillURL)
            #expect(bytes.body == generated(length: 1 << 20, seed: 22, version: 1))
            // A client that sees its output complete asks for the byte after it and gets 416.
            let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
            var request = URLRequest(url: URL(string: url)!)
            request.setValue("bytes=1048576-", forHTTPHeaderField: "Range")
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 416)
            let verdict = try await client.send(
                "POST", try #require(run["result"] as? String),
                json: [
                    "outcome": "success", "outputs": [ServiceClient.output(route: "", bytes.body)],
                    "steps-done": ["prefill"],
                ])
            #expect(verdict.object["result"] as? String == "pass", "\(verdict.text)")
        }
    }

    @Test("https runs are handed out on the TLS port with the CA; --public-url names the host and port clients use")
    func schemesAndPublicURL() async throws {
        try await withService({ $0.publicURL = "http://10.0.2.2:18090" }, server: { $0.tlsPort = 0 }) {
            _, server, client in
            let plain = try await client.createRun("plain", client: "emulator")
            let url = try #require((plain["urls"] as? [[String: Any]])?.first?["url"] as? String)
            #expect(url.hasPrefix("http://10.0.2.2:18090/scenario/plain/"))
            #expect((plain["result"] as? String)?.hasPrefix("http://10.0.2.2:18090/_conformance/runs/") == true)
            #expect(plain["ca"] == nil)
            let secure = try await client.createRun("plain", client: "emulator", scheme: "https")
            let tlsPort = try #require(server.tlsPort)
            let secureURL = try #require((secure["urls"] as? [[String: Any]])?.first?["url"] as? String)
            #expect(secureURL.hasPrefix("https://10.0.2.2:\(tlsPort)/scenario/plain/"))
            #expect((secure["ca"] as? String)?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
            let pem = try await client.send("GET", "/_conformance/ca.pem")
            #expect(pem.text == server.certificateAuthorityPEM)
        }
    }

    @Test("without --public-url, URLs use the host and port the client's request named (a forwarded port)")
    func hostHeader() async throws {
        try await withService { service, server, _ in
            let answer = await service.handle(
                CustomRoute.Request(
                    method: "POST", path: "/_conformance/runs", headers: ["host": "10.0.2.2:18091"],
                    body: Array(#"{"scenario": "plain", "client": "forwarded"}"#.utf8)))
            #expect(answer.status == 201)
            let created = try JSONDecoder().decode(ConformanceAPI.RunCreated.self, from: Data(answer.body))
            #expect(created.urls.first?.url.hasPrefix("http://10.0.2.2:18091/scenario/plain/") == true)
            #expect(created.result == "http://10.0.2.2:18091/_conformance/runs/\(created.run)/result")
            // A request without Host (HTTP/1.0) gets the address the server listens on.
            let bare = await service.handle(
                CustomRoute.Request(
                    method: "POST", path: "/_conformance/runs",
                    body: Array(#"{"scenario": "plain", "client": "b"}"#.utf8)))
            let plain = try JSONDecoder().decode(ConformanceAPI.RunCreated.self, from: Data(bare.body))
            #expect(plain.urls.first?.url.hasPrefix(server.baseURL + "/scenario/plain/") == true)
        }
    }

    @Test("the scenario listing has every catalogue scenario with its steps and expect section")
    func listing() async throws {
        try await withService { service, _, client in
            let answer = try await client.send("GET", "/_conformance/scenarios")
            let scenarios = try #require(answer.object["scenarios"] as? [[String: Any]])
            #expect(service.verdicts.isEmpty)
            #expect(scenarios.count == CatalogueEntryCount.value)
            let kill = try #require(scenarios.first { $0["name"] as? String == "kill-at-25" })
            #expect((kill["steps"] as? [[String: Any]])?.first?["kill-at"] as? String == "25%")
            let expect = try #require(kill["expect"] as? [String: Any])
            #expect(expect["max-refetched"] as? String == "1M")
            #expect(expect["resume-range"] as? String == "at-most")
            // A row whose URL must resolve to a dead ::1 beside the server cannot be given to a remote tester.
            #expect(!scenarios.contains { $0["name"] as? String == "dead-ipv6" })
            let refused = try await client.send(
                "POST", "/_conformance/runs", json: ["scenario": "dead-ipv6", "client": "x"])
            #expect(refused.status == 404)
        }
    }
}

/// How many scenarios of the catalogue the service hands out (all but `dead-ipv6` rows).
enum CatalogueEntryCount {
    static var value: Int {
        (try? CatalogueEntry.load(
            directory: repositoryPath("fixtures/scenarios"), root: repositoryPath("fixtures/files")))?
            .filter { $0.expectation.entry != .deadIPv6 }.count ?? -1
    }
}
