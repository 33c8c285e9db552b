import Foundation
import Testing

@testable import RangeServer

/// The repository root, found from this file so the tests work in any checkout.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The keys a scenario step takes besides the fault keys.
private let scenarioOnlyStepKeys = ["version", "size", "redirect", "redirect-code", "redirect-host"]

/// The fault keys' descriptors, and every list that must agree with them: docs/faults.md's key table, the scenario
/// schema's step keys, the index page, the journal's names, the merge and the body reader's faults.
@Suite("FaultKey")
struct FaultKeyTests {
    private func parse(_ query: String) throws -> FaultPlan {
        try FaultPlan.parse(query: QueryString.parse(query)).plan
    }

    /// A query that sets `key` alone, with what it requires.
    private func query(setting key: FaultKey) -> String {
        var query = "\(key.name)=\(key.example)"
        if key == .stallFor { query += "&stall-after=1" }
        if key == .retryAfter { query += "&status=503" }
        if key == .probability { query += "&drop-after=1" }
        if key == .faultSeed { query += "&probability=0.5&drop-after=1" }
        if key == .rstCode { query += "&rst-stream-after=1" }
        if key == .goAway { query += "&goaway-after=1" }
        return query
    }

    @Test("names are unique, non-empty, lower-case tokens, and the parser knows each by name")
    func namesAreUnique() {
        let names = FaultKey.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(FaultKey.named.count == names.count)
        for key in FaultKey.all {
            #expect(!key.name.isEmpty && key.name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" }, "\(key)")
            #expect(FaultKey.named[key.name] == key)
            #expect(!key.help.isEmpty && !key.help.contains("\n"), "\(key)")
            #expect(!FaultPlan.passthroughKeys.contains(key.name), "\(key)")
        }
    }

    @Test("each key's example parses and prints to a canonical value that parses back to the same plan")
    func examplesRoundTrip() throws {
        for key in FaultKey.all {
            let plan = try parse(query(setting: key))
            let canonical = try #require(plan.canonicalValue(of: key), "\(key)")
            #expect(plan.appliedNames.contains("\(key.name)=\(canonical)"), "\(key)")
            #expect(try parse(plan.appliedNames.joined(separator: "&")) == plan, "\(key)")
        }
    }

    @Test("a bad value is refused with one line naming the key, the value and the expected form")
    func badValues() {
        for key in FaultKey.all {
            var plan = FaultPlan()
            do {
                try plan.set(key, from: "\u{1}bogus")
                Issue.record("\(key) accepted a bad value")
            } catch {
                #expect(error.key == key.name)
                #expect(error.message == "\(key.name)=?bogus: expected \(key.expected)")
            }
        }
    }

    @Test("each key set alone in a query wins over a step that sets every other key")
    func mergeOverStep() throws {
        for key in FaultKey.all {
            let query = try parse(query(setting: key))
            // A step with a different value of the key, where it has one.
            let step = try parse("delay=5s&status=500&retry-after=9&drop-after=7&weak-etag=1&probability=0.25")
            let merged = query.merged(over: step)
            #expect(merged.canonicalValue(of: key) == query.canonicalValue(of: key), "\(key)")
            #expect(query.merged(over: FaultPlan()) == query, "\(key)")
            #expect(FaultPlan().merged(over: query) == query, "\(key)")
        }
    }

    @Test("keys of one group move together; a follower moves with its leader")
    func mergeUnits() throws {
        let step = try parse(
            "stall-after=1M&stall-for=5s&probability=0.5&fault-seed=3&drop-after=1&status=503&retry-after=4")
        let query = try parse("stall-after=2M&probability=0.25&tls-truncate-after=9&status=500")
        let merged = query.merged(over: step)
        #expect(merged.stallAfter == 2 << 20 && merged.explicitStallFor == nil)
        #expect(merged.probability == 250_000 && merged.faultSeed == nil)
        #expect(merged.dropAfter == nil && merged.tlsTruncateAfter == 9)
        #expect(merged.status == 500 && merged.retryAfter == nil)
        // A follower alone (retry-after with connection-cap) moves alone, keeping the step's leader.
        let capped = try parse("connection-cap=2&retry-after=7").merged(over: step)
        #expect(capped.status == 503 && capped.retryAfter == .seconds(7))
    }

    @Test("the journal lists on a response without a body only the keys that need none")
    func needsBody() {
        #expect(FaultKey.needsBody(name: "drop-after=1"))
        #expect(FaultKey.needsBody(name: "chunked-with-length=1"))
        #expect(!FaultKey.needsBody(name: "delay=1s"))
        #expect(!FaultKey.needsBody(name: "status=503"))
        for key in FaultKey.all where key.bodyFault != nil {
            #expect(key.needsBody, "\(key) changes the body, so it means nothing without one")
        }
    }

    @Test("body faults come out of the plan in the order the reader applies them")
    func bodyFaultOrder() throws {
        let plan = try parse("garbage-after=9&rate=1K&drop-after=5&stall-after=3&stall-for=2s")
        #expect(
            plan.bodyFaults == [
                .stall(after: 3, for: .seconds(2)), .end(after: 5, .drop), .pace(bytesPerSecond: 1024),
                .garbage(after: 9),
            ])
        #expect(
            try parse("bad-chunk-after=4&reset-after=4").bodyFaults == [
                .malformedChunk(after: 4), .end(after: 4, .reset),
            ])
        #expect(try parse("length-delta=-1K").bodyFaults == [.lengthDelta(-1024)])
        #expect(try parse("tls-truncate-after=0").bodyFaults == [.end(after: 0, .truncate)])
        #expect(try parse("stall-after=1").bodyFaults == [.stall(after: 1, for: FaultPlan.defaultStallDuration)])
        #expect(try parse("no-etag=1&chunked=1&delay=1s").bodyFaults.isEmpty)
    }

    @Test("docs/faults.md's key table lists every key once, with its value form")
    func docsTable() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/faults.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex(of: "| Parameter | Value | Effect |"))
        var rows: [(name: String, form: String)] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("| `") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            rows.append((String(cells[1].dropFirst().dropLast()), cells[2]))
        }
        #expect(Set(rows.map(\.name)).count == rows.count, "a key listed twice")
        #expect(Set(rows.map(\.name)) == Set(FaultKey.all.map(\.name)))
        let forms = Dictionary(rows.map { ($0.name, $0.form) }, uniquingKeysWith: { first, _ in first })
        for key in FaultKey.all {
            #expect(forms[key.name] == key.valueForm, "docs/faults.md's value of \(key)")
        }
    }

    @Test("docs/faults.md's HTTP/2 table says what every key means over h2, refused exactly where the listener refuses")
    func docsHTTP2Table() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/faults.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex(of: "| Key | Over HTTP/2 |"))
        var meanings: [String: String] = [:]
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("| `") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let name = String(cells[1].dropFirst().dropLast())
            #expect(meanings[name] == nil, "\(name) listed twice")
            meanings[name] = cells[2]
        }
        #expect(Set(meanings.keys) == Set(FaultKey.all.map(\.name)))
        let connection = HTTP2StreamConnection()
        for key in FaultKey.all {
            let refused = meanings[key.name]?.hasPrefix("Refused") == true
            #expect(refused == (connection.refusal(of: key) != nil), "\(key.name): the table and the listener disagree")
        }
    }

    @Test("the scenario schema's step keys are the fault keys and the scenario's own, each described")
    func schemaStepKeys() throws {
        let data = try Data(contentsOf: repositoryRoot.appendingPathComponent("fixtures/scenarios/schema.json"))
        let schema = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let defs = try #require(schema["$defs"] as? [String: Any])
        let step = try #require(defs["step"] as? [String: Any])
        let properties = try #require(step["properties"] as? [String: [String: Any]])
        #expect(Set(properties.keys) == Set(FaultKey.all.map(\.name) + scenarioOnlyStepKeys))
        for key in FaultKey.all {
            let property = try #require(properties[key.name], "\(key)")
            #expect((property["description"] as? String)?.isEmpty == false, "\(key) has no description")
            // A flag's and a size's form is one shared definition.
            if key.valueForm == "flag" { #expect(property["$ref"] as? String == "#/$defs/flag", "\(key)") }
            if key.valueForm == "size" { #expect(property["$ref"] as? String == "#/$defs/size", "\(key)") }
            if key.valueForm == "duration" { #expect(property["$ref"] as? String == "#/$defs/duration", "\(key)") }
        }
    }

    @Test("the index page lists every key with its value placeholder and help, grouped by kind")
    func indexListing() {
        let listed = Router.faultListing.flatMap(\.keys)
        #expect(Set(listed) == Set(FaultKey.all))
        #expect(listed.count == FaultKey.all.count)
        for (kind, keys) in Router.faultListing {
            #expect(keys.allSatisfy { $0.kind == kind })
        }
    }
}
