import Conformance
import Foundation
import RangeServer
import Testing

/// The service against the constraints docs/conformance-api.json states: what the document allows is accepted, what
/// it refuses is answered 400 with one line naming the culprit, and `DELETE` removes columns and runs for good.
@Suite("Conformance service contract")
struct ServiceContractTests {
    /// Expects a 4xx whose one-line error contains `fragment`.
    private static func expectError(_ answer: ServiceClient.Answer, _ status: Int, _ fragment: String) {
        #expect(answer.status == status, "\(answer.text)")
        let message = answer.object["error"] as? String ?? ""
        #expect(message.contains(fragment), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test("labels: 1-100 printable characters without a space at either end; control characters are refused")
    func labels() async throws {
        try await withService { service, _, client async throws in
            for label in [
                "a", String(repeating: "é", count: 100), "my app 🚀 (iOS 18)", "tab\tinside", "bell\u{7}", "c1\u{99}",
                "line\u{2028}sep", " lead", "trail ", "", String(repeating: "x", count: 101), "new\nline", "del\u{7F}",
            ] {
                let answer = try await client.send(
                    "POST", "/_conformance/runs", json: ["scenario": "plain", "client": label])
                let allowed = ConformanceAPI.labelProblem(label) == nil
                #expect(answer.status == (allowed ? 201 : 400), "\(label.debugDescription): \(answer.text)")
                if !allowed { Self.expectError(answer, 400, "client: ") }
            }
            #expect(ConformanceAPI.labelProblem(String(repeating: "é", count: 100)) == nil)
            #expect(ConformanceAPI.labelProblem("c1\u{99}") == "control character U+0099 in the label")
            #expect(ConformanceAPI.labelProblem("tab\tinside") == "control character U+0009 in the label")
            #expect(ConformanceAPI.labelProblem(" lead") == "the label starts or ends with a space")
            #expect(ConformanceAPI.labelProblem("") == "a label of 1 to 100 characters is required, got 0")
            #expect(service.heldRunCount == 3)
        }
    }

    @Test("labels: the document's pattern and lengths accept exactly what the service accepts")
    func labelPatternAgrees() throws {
        let document = try ServiceAPIDocumentTests.document()
        let check = JSONSchemaCheck(document: document)
        let schema = try #require(check.resolve("#/components/schemas/RunRequest"))
        var random = LabelRandom(seed: 7)
        var samples = [
            "", " ", "a", "a b", " a", "a ", "\u{0}", "\u{1F}", "\u{20}x", "x\u{7F}", "\u{80}", "\u{9F}", "\u{A0}",
            "\u{2028}", "\u{2029}", "\u{202E}", "é", String(repeating: "y", count: 100),
            String(repeating: "y", count: 101),
        ]
        for _ in 0..<500 { samples.append(random.label()) }
        for label in samples {
            let documented = check.problems(["scenario": "plain", "client": label], schema).isEmpty
            #expect(documented == (ConformanceAPI.labelProblem(label) == nil), "\(label.debugDescription)")
        }
    }

    @Test("bodies the document refuses are answered 400 naming the member: unknown, null, bad enum, bad digest")
    func strictBodies() async throws {
        try await withService { _, _, client async throws in
            Self.expectError(
                try await client.send(
                    "POST", "/_conformance/runs", json: ["scenario": "plain", "client": "x", "y": 1]),
                400, "y: not a property the API document allows")
            Self.expectError(
                try await client.send(
                    "POST", "/_conformance/runs", raw: #"{"scenario": "plain", "client": "x", "scheme": null}"#),
                400, "scheme: must not be null")
            let created = try await client.createRun("plain", client: "strict")
            let result = try #require(created["result"] as? String)
            let url = try #require((created["urls"] as? [[String: Any]])?.first?["url"] as? String)
            let output = ServiceClient.output(route: "", try await client.download(url))
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [output], "extra": 1]),
                400, "extra: not a property")
            Self.expectError(
                try await client.send(
                    "POST", result, json: ["outcome": "success", "outputs": [output], "steps-done": ["jump"]]),
                400, "'jump' is not a step name")
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [output, output]]),
                409, "outputs: two outputs for route ''")
            // A blocks list that contradicts size: schema-valid, so a 409 (a rule no schema states), and the run
            // stays open for a corrected report.
            var shortBlocks = output
            shortBlocks["size"] = 65537
            shortBlocks["blocks"] = [String(repeating: "0", count: 64)]
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [shortBlocks]]), 409,
                "output '': 1 blocks for 65537 bytes, expected 2")
            var badDigest = output
            badDigest["sha256"] = "abc"
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [badDigest]]), 400,
                "outputs[0].sha256: not 64 hex digits")
            var badBlock = output
            badBlock["blocks"] = ["zz"]
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [badBlock]]), 400,
                "outputs[0].blocks[0]: not 64 hex digits")
            var huge = output
            huge["size"] = UInt64(1) << 60
            Self.expectError(
                try await client.send("POST", result, json: ["outcome": "success", "outputs": [huge]]), 400,
                "is over 2^53 - 1")
            Self.expectError(
                try await client.send(
                    "POST", result, json: ["outcome": "success", "outputs": [["route": "", "size": 3]]]),
                400, "give blocks")
            // None of them used the run up.
            let good = try await client.send("POST", result, json: ["outcome": "success", "outputs": [output]])
            #expect(good.object["result"] as? String == "pass", "\(good.text)")
        }
    }

    @Test("DELETE of a column removes it from the report and the results file, so a restart does not bring it back")
    func deleteColumn() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("delete-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = directory.appendingPathComponent("results.jsonl").path
        try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            _ = try await client.judgePlain(label: "keep")
            _ = try await client.judgePlain(label: "drop")
            _ = try await client.judgePlain(label: "drop", corrupt: true)
            let pending = try #require(try await client.createRun("plain", client: "drop")["run"] as? String)
            let removed = try await client.send("DELETE", "/_conformance/columns/drop")
            #expect(removed.status == 200, "\(removed.text)")
            #expect(removed.object["verdicts"] as? Int == 2)
            #expect(removed.object["pending"] as? Int == 1)
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.object["clients"] as? [String] == ["keep"])
            Self.expectError(try await client.send("GET", "/_conformance/runs/\(pending)"), 404, "was deleted")
            Self.expectError(try await client.send("DELETE", "/_conformance/columns/drop"), 404, "no column 'drop'")
            Self.expectError(try await client.send("GET", "/_conformance/columns/keep"), 405, "GET")
        }
        let text = try String(contentsOfFile: results, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 1)
        #expect(!text.contains(#""client":"drop""#))
        try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            let report = try await client.send("GET", "/_conformance/report?format=json")
            #expect(report.object["clients"] as? [String] == ["keep"])
        }
    }

    @Test("DELETE of a judged run takes its verdict out; the cell shows the pair's previous verdict from the file")
    func deleteRun() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("delete-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = directory.appendingPathComponent("results.jsonl").path
        try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            let (passed, _) = try await client.judgePlain(label: "twice")
            let (failed, answer) = try await client.judgePlain(label: "twice", corrupt: true)
            #expect(answer.object["result"] as? String == "fail")
            var markdown = try await client.send("GET", "/_conformance/report?format=markdown")
            #expect(markdown.text.contains("| plain[^plain] | **CORRUPT**: bytes differ"), "\(markdown.text)")
            let removed = try await client.send("DELETE", "/_conformance/runs/\(failed)")
            #expect(removed.status == 200, "\(removed.text)")
            #expect(removed.object["verdicts"] as? Int == 1)
            markdown = try await client.send("GET", "/_conformance/report?format=markdown")
            #expect(markdown.text.contains("| plain[^plain] | pass |"), "\(markdown.text)")
            Self.expectError(try await client.send("GET", "/_conformance/runs/\(failed)"), 404, "was deleted")
            #expect(try await client.send("GET", "/_conformance/runs/\(passed)").status == 200)
            // A pending run is forgotten; reporting it afterwards is 404, saying it was deleted (410 is for a run the
            // service forgot by itself).
            let pending = try await client.createRun("plain", client: "twice")
            let run = try #require(pending["run"] as? String)
            let forgotten = try await client.send("DELETE", "/_conformance/runs/\(run)")
            #expect(forgotten.object["pending"] as? Int == 1)
            #expect(forgotten.object["verdicts"] as? Int == 0)
            #expect(
                try await client.send(
                    "POST", try #require(pending["result"] as? String), json: ["outcome": "success", "outputs": []]
                ).status == 404)
            // A request the document refuses is a 400 before its run is looked up, held or not.
            Self.expectError(
                try await client.send(
                    "POST", try #require(pending["result"] as? String),
                    json: ["outcome": "success", "outputs": [["route": "no-such-route", "exists": false]]]),
                400, "outputs: route 'no-such-route' is not a route of any scenario")
            Self.expectError(
                try await client.send(
                    "POST", try #require(pending["result"] as? String),
                    json: [
                        "outcome": "success",
                        "outputs": [["route": "", "size": 65537, "blocks": [String(repeating: "0", count: 64)]]],
                    ]),
                // A blocks list that contradicts size is a rule over the report against its run: the run first.
                404, "was deleted")
            Self.expectError(
                try await client.send("GET", "/_conformance/runs/\(run)/prefill?route=&route="), 400,
                "route: given 2 times; give it once")
            // A route no scenario has is refused before the deleted run is looked up, as the document's enum does.
            Self.expectError(
                try await client.send("GET", "/_conformance/runs/\(run)/prefill?route=null"), 400,
                "route: 'null' is not a route of any scenario")
            // An output that does not exist is judged by that alone: its other members are not checked.
            Self.expectError(
                try await client.send(
                    "POST", try #require(pending["result"] as? String),
                    json: [
                        "outcome": "success",
                        "outputs": [["route": "", "exists": false, "size": 65537, "blocks": [] as [String]]],
                    ]),
                404, "was deleted")
            Self.expectError(try await client.send("DELETE", "/_conformance/runs/never"), 404, "no run 'never'")
        }
        try await withService({ $0.resultsFile = results }) { _, _, client async throws in
            let markdown = try await client.send("GET", "/_conformance/report?format=markdown")
            #expect(markdown.text.contains("| plain[^plain] | pass |"), "\(markdown.text)")
        }
    }

    @Test("DELETE needs the token like every request, and without a results file removes from memory")
    func deleteNeedsTheToken() async throws {
        try await withService({ $0.token = "t" }) { service, _, client async throws in
            _ = try await client.judgePlain(label: "gone")
            var anonymous = client
            anonymous.token = nil
            #expect(try await anonymous.send("DELETE", "/_conformance/columns/gone").status == 401)
            #expect(service.verdicts.count == 1)
            let removed = try await client.send("DELETE", "/_conformance/columns/gone")
            #expect(removed.object["verdicts"] as? Int == 1)
            #expect(service.verdicts.isEmpty)
            // A judged run that is no longer its cell's latest is still a run to delete, and then it is gone.
            let (older, _) = try await client.judgePlain(label: "pair")
            let (newer, _) = try await client.judgePlain(label: "pair", corrupt: true)
            let dropped = try await client.send("DELETE", "/_conformance/runs/\(older)")
            #expect(dropped.object["verdicts"] as? Int == 1, "\(dropped.text)")
            Self.expectError(try await client.send("GET", "/_conformance/runs/\(older)"), 404, "was deleted")
            #expect(service.verdicts.map(\.run) == [newer])
        }
    }

    @Test("GET openapi.json serves the document with the catalogue's scenario and route names as enums")
    func servedDocument() async throws {
        try await withService(server: {
            $0.tlsPort = 0; $0.h2Port = 0; $0.h2cPort = 0
        }) { _, server, client async throws in
            let answer = try await client.send("GET", "/_conformance/openapi.json")
            #expect(answer.status == 200)
            #expect(answer.contentType == "application/json")
            var served = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            #expect((served["servers"] as? [[String: Any]])?.first?["url"] as? String == server.baseURL)
            let schemas = try #require((served["components"] as? [String: Any])?["schemas"] as? [String: Any])
            let scenarioEnum = try #require(
                (((schemas["RunRequest"] as? [String: Any])?["properties"] as? [String: Any])?["scenario"]
                    as? [String: Any])?["enum"] as? [String])
            let catalogue = try CatalogueEntry.load(
                directory: repositoryPath("fixtures/scenarios"), root: repositoryPath("fixtures/files"))
            // The service leaves out the rows it cannot hand out (`dead-ipv6`).
            #expect(scenarioEnum == catalogue.filter { $0.expectation.entry != .deadIPv6 }.map(\.name).sorted())
            let routeEnum = try #require(
                (((schemas["ReportedOutput"] as? [String: Any])?["properties"] as? [String: Any])?["route"]
                    as? [String: Any])?["enum"] as? [String])
            #expect(routeEnum.contains(""))
            #expect(routeEnum.contains("f12"))
            // Without a token the service asks for none, so the document declares no security requirement.
            #expect(served["security"] == nil)
            // Without the names, the server and that, it is docs/conformance-api.json.
            var stripped = served
            stripped["servers"] = (try ServiceAPIDocumentTests.document())["servers"]
            stripped["security"] = (try ServiceAPIDocumentTests.document())["security"]
            served = Self.removingEnums(stripped)
            let document = try ServiceAPIDocumentTests.document()
            #expect(NSDictionary(dictionary: served).isEqual(to: Self.removingEnums(document)))
        }
    }

    @Test(
        "the served document pairs each row with the schemes it runs over and this server has, as the service does",
        arguments: [false, true])
    func servedSchemePairing(allPorts: Bool) async throws {
        try await withService(server: {
            if allPorts { $0.tlsPort = 0; $0.h2Port = 0; $0.h2cPort = 0 }
        }) { _, _, client async throws in
            let answer = try await client.send("GET", "/_conformance/openapi.json")
            let served = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            let request = try #require(
                ((served["components"] as? [String: Any])?["schemas"] as? [String: Any])?["RunRequest"]
                    as? [String: Any])
            let properties = try #require(request["properties"] as? [String: Any])
            let schemes = try #require((properties["scheme"] as? [String: Any])?["enum"] as? [String])
            // The test server has a TLS port whatever it is asked; the HTTP/2 ports only when asked for.
            #expect(schemes == (allPorts ? ["http", "https", "h2", "h2c"] : ["http", "https"]))
            let scenarios = try #require((properties["scenario"] as? [String: Any])?["enum"] as? [String])
            let rules = try #require(request["anyOf"] as? [[String: Any]])
            /// Whether a branch of the `anyOf` takes the pair, as a JSON Schema validator reads it.
            func admits(_ scenario: String, _ scheme: String?) -> Bool {
                rules.contains { rule in
                    let members = rule["properties"] as? [String: Any] ?? [:]
                    let names = (members["scenario"] as? [String: Any])?["enum"] as? [String] ?? []
                    let allowed = (members["scheme"] as? [String: Any])?["enum"] as? [String] ?? []
                    let required = rule["required"] as? [String] ?? []
                    guard names.contains(scenario) else { return false }
                    guard let scheme else { return !required.contains("scheme") }
                    return allowed.contains(scheme)
                }
            }
            let catalogue = try CatalogueEntry.load(
                directory: repositoryPath("fixtures/scenarios"), root: repositoryPath("fixtures/files"))
            let handedOut = catalogue.filter { $0.expectation.entry != .deadIPv6 && $0.expectation.entry != .blackhole }
            #expect(scenarios.contains("plain") && scenarios.contains("h2-reset-cancel") == allPorts)
            var checked = 0
            for entry in handedOut where scenarios.contains(entry.name) {
                for scheme in schemes.map(Optional.some) + [nil] {
                    var body: [String: Any] = ["scenario": entry.name, "client": "pairing"]
                    if let scheme { body["scheme"] = scheme }
                    let created = try await client.send("POST", "/_conformance/runs", json: body)
                    #expect(
                        (created.status == 201) == admits(entry.name, scheme),
                        "\(entry.name) over \(scheme ?? "(absent)"): \(created.status) \(created.text)")
                    checked += 1
                }
            }
            #expect(checked >= 2 * (allPorts ? 5 : 2), "\(checked) pairs")
            // A row left out of the enum runs over none of the schemes this server has.
            for entry in handedOut where !scenarios.contains(entry.name) {
                let refused = try await client.send(
                    "POST", "/_conformance/runs", json: ["scenario": entry.name, "client": "pairing"])
                #expect(refused.status == 400, "\(entry.name): \(refused.text)")
            }
        }
    }

    @Test("with a token, the served document requires it as docs/conformance-api.json does")
    func servedDocumentWithToken() async throws {
        try await withService({ $0.token = "secret-token" }) { _, _, client async throws in
            let answer = try await client.send("GET", "/_conformance/openapi.json")
            #expect(answer.status == 200)
            let served = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            let security = try #require(served["security"] as? [[String: Any]])
            #expect(security.flatMap(\.keys).sorted() == ["bearer", "cookieToken", "queryToken"])
        }
    }

    /// The document without the `enum` lists the service adds (scenario, output route, prefill route) and the
    /// `anyOf` pairing rows with schemes.
    private static func removingEnums(_ document: [String: Any]) -> [String: Any] {
        var copy = document
        var components = copy["components"] as! [String: Any]
        var schemas = components["schemas"] as! [String: Any]
        for (schema, property) in [("RunRequest", "scenario"), ("ReportedOutput", "route")] {
            var object = schemas[schema] as! [String: Any]
            object["anyOf"] = schema == "RunRequest" ? nil : object["anyOf"]
            var properties = object["properties"] as! [String: Any]
            var member = properties[property] as! [String: Any]
            member["enum"] = nil
            properties[property] = member
            object["properties"] = properties
            schemas[schema] = object
        }
        components["schemas"] = schemas
        copy["components"] = components
        var paths = copy["paths"] as! [String: Any]
        var item = paths["/_conformance/runs/{run}/prefill"] as! [String: Any]
        var operation = item["get"] as! [String: Any]
        operation["parameters"] = (operation["parameters"] as! [[String: Any]]).map { parameter in
            guard parameter["name"] as? String == "route", var schema = parameter["schema"] as? [String: Any] else {
                return parameter
            }
            var changed = parameter
            schema["enum"] = nil
            changed["schema"] = schema
            return changed
        }
        item["get"] = operation
        paths["/_conformance/runs/{run}/prefill"] = item
        copy["paths"] = paths
        return copy
    }
}

/// Labels drawn from the characters the label rule cares about, and others, for the pattern test.
struct LabelRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    private mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }

    mutating func label() -> String {
        let pool: [Unicode.Scalar] = [
            "a", "Z", "0", " ", "-", "\u{0}", "\t", "\u{1F}", "\u{7F}", "\u{85}", "\u{9F}", "\u{A0}", "é", "\u{2028}",
            "\u{2029}", "\u{3000}", "🚀",
        ]
        let length = Int(next() % 104)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length { scalars.append(pool[Int(next() % UInt64(pool.count))]) }
        return String(scalars)
    }
}
