import Foundation
import RangeServer
import Testing

@testable import Conformance

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server against docs/conformance-api.json: every operation the document lists is called, and every answer's
/// status must be documented for it, with a body that conforms to the documented schema.
@Suite("Conformance API document")
struct ServiceAPIDocumentTests {
    static func document() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: repositoryPath("docs/conformance-api.json")))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("the schema check itself: it accepts a conforming value and names what breaks one")
    func schemaCheckCanFail() throws {
        let check = JSONSchemaCheck(document: try Self.document())
        let verdict = try #require(check.resolve("#/components/schemas/Verdict"))
        let good: [String: Any] = [
            "scenario": "plain", "client": "c", "scheme": "http", "run": "r", "result": "pass", "reason": "",
            "time": "t",
            "elapsed-ms": 3,
        ]
        #expect(check.problems(good, verdict).isEmpty)
        var bad = good
        bad["result"] = "maybe"
        bad["extra"] = true
        bad["elapsed-ms"] = "3"
        bad.removeValue(forKey: "run")
        let problems = check.problems(bad, verdict)
        #expect(problems.contains { $0.contains("missing required run") })
        #expect(problems.contains { $0.contains("undocumented property extra") })
        #expect(problems.contains { $0.contains("elapsed-ms: expected integer") })
        #expect(problems.contains { $0.contains("maybe") })
        #expect(!check.problems(["error": true], try #require(check.resolve("#/components/schemas/Error"))).isEmpty)
    }

    @Test("the service serves docs/conformance-api.json as it is (scripts/lib/api_document.py copies it)")
    func documentIsTheServedOne() throws {
        let file = try String(contentsOfFile: repositoryPath("docs/conformance-api.json"), encoding: .utf8)
        #expect(
            file == ConformanceAPIDocument.text + "\n",
            "docs/conformance-api.json and the service's copy differ: run python3 scripts/lib/api_document.py")
    }

    @Test("every documented operation answers as the document says, errors included")
    func serverMatchesDocument() async throws {
        let document = try Self.document()
        let check = JSONSchemaCheck(document: document)
        let paths = try #require(document["paths"] as? [String: Any])
        var called: Set<String> = []
        try await withService(server: { $0.tlsPort = 0 }) { _, _, client in
            /// Sends a request for an operation and checks the answer against the document.
            func call(
                _ method: String, _ template: String, _ path: String, json: Any? = nil, expect status: Int
            ) async throws -> ServiceClient.Answer {
                let answer = try await client.send(method, path, json: json)
                #expect(answer.status == status, "\(method) \(path): \(answer.text)")
                let operation = try #require(
                    (paths[template] as? [String: Any])?[method.lowercased()] as? [String: Any], "\(method) \(template)"
                )
                called.insert("\(method) \(template)")
                let responses = try #require(operation["responses"] as? [String: Any])
                var response = try #require(
                    responses[String(answer.status)] as? [String: Any],
                    "\(method) \(template): \(answer.status) undocumented")
                if let reference = response["$ref"] as? String { response = try #require(check.resolve(reference)) }
                let content = try #require(response["content"] as? [String: Any])
                let mediaType = answer.contentType.split(separator: ";").first.map(String.init) ?? ""
                let media = try #require(
                    content[mediaType] as? [String: Any], "\(method) \(template): \(mediaType) undocumented")
                if mediaType == "application/json", let schema = media["schema"] as? [String: Any] {
                    let value = try JSONSerialization.jsonObject(with: answer.body)
                    let problems = check.problems(value, schema)
                    #expect(problems.isEmpty, "\(method) \(path): \(problems)")
                }
                return answer
            }
            _ = try await call("GET", "/_conformance/scenarios", "/_conformance/scenarios", expect: 200)
            let created = try await call(
                "POST", "/_conformance/runs", "/_conformance/runs",
                json: ["scenario": "already-complete-416", "client": "doc", "scheme": "https"], expect: 201)
            _ = try await call(
                "POST", "/_conformance/runs", "/_conformance/runs", json: ["scenario": 3, "client": "doc"], expect: 400)
            _ = try await call(
                "POST", "/_conformance/runs", "/_conformance/runs", json: ["scenario": "none", "client": "doc"],
                expect: 404)
            let run = try #require(created.object["run"] as? String)
            _ = try await call("GET", "/_conformance/runs/{run}", "/_conformance/runs/\(run)", expect: 200)
            _ = try await call("GET", "/_conformance/runs/{run}", "/_conformance/runs/missing", expect: 404)
            let prefill = try await call(
                "GET", "/_conformance/runs/{run}/prefill", "/_conformance/runs/\(run)/prefill", expect: 200)
            _ = try await call(
                "GET", "/_conformance/runs/{run}/prefill", "/_conformance/runs/missing/prefill", expect: 404)
            let result = "/_conformance/runs/\(run)/result"
            let report: [String: Any] = [
                "outcome": "success", "outputs": [ServiceClient.output(route: "", prefill.body)],
                "steps-done": ["prefill"],
            ]
            _ = try await call(
                "POST", "/_conformance/runs/{run}/result", result, json: ["outcome": "success"], expect: 400)
            _ = try await call(
                "POST", "/_conformance/runs/{run}/result", "/_conformance/runs/missing/result", json: report,
                expect: 404)
            _ = try await call("POST", "/_conformance/runs/{run}/result", result, json: report, expect: 200)
            _ = try await call("POST", "/_conformance/runs/{run}/result", result, json: report, expect: 409)
            _ = try await call("GET", "/_conformance/ca.pem", "/_conformance/ca.pem", expect: 200)
            for format in ["html", "json", "junit", "markdown"] {
                _ = try await call("GET", "/_conformance/report", "/_conformance/report?format=\(format)", expect: 200)
            }
            _ = try await call("GET", "/_conformance/report", "/_conformance/report?format=pdf", expect: 400)
            _ = try await call(
                "GET", "/_conformance/report/{scenario}/{client}", "/_conformance/report/plain/nobody", expect: 404)
            _ = try await call(
                "GET", "/_conformance/report/{scenario}/{client}",
                "/_conformance/report/already-complete-416/doc%20(https)",
                expect: 200)
            _ = try await call("GET", "/_conformance/openapi.json", "/_conformance/openapi.json", expect: 200)
            _ = try await call(
                "DELETE", "/_conformance/columns/{column}", "/_conformance/columns/doc%20(https)", expect: 200)
            _ = try await call(
                "DELETE", "/_conformance/columns/{column}", "/_conformance/columns/doc%20(https)", expect: 404)
            // With its column, the judged run is deleted everywhere: 404, as any deleted resource.
            _ = try await call("GET", "/_conformance/runs/{run}", "/_conformance/runs/\(run)", expect: 404)
            _ = try await call("DELETE", "/_conformance/runs/{run}", "/_conformance/runs/\(run)", expect: 404)
            _ = try await call("POST", "/_conformance/runs/{run}/result", result, json: report, expect: 404)
            _ = try await call(
                "GET", "/_conformance/runs/{run}/prefill", "/_conformance/runs/\(run)/prefill", expect: 404)
            let another = try #require(
                try await call(
                    "POST", "/_conformance/runs", "/_conformance/runs", json: ["scenario": "plain", "client": "doc"],
                    expect: 201
                ).object["run"] as? String)
            _ = try await call("DELETE", "/_conformance/runs/{run}", "/_conformance/runs/\(another)", expect: 200)
            _ = try await call("DELETE", "/_conformance/runs/{run}", "/_conformance/runs/missing", expect: 404)
        }
        var documented: Set<String> = []
        for (path, item) in paths {
            for method in (item as? [String: Any] ?? [:]).keys { documented.insert("\(method.uppercased()) \(path)") }
        }
        #expect(called == documented, "documented but not called: \(documented.subtracting(called))")
    }
}
