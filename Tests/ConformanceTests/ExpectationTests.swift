import Conformance
import RangeServer
import Testing

@Suite struct ExpectationTests {
    /// Decodes `json` as the `expect` section of a file `s.json`.
    static func parse(_ json: String) throws -> ScenarioExpectation {
        try ScenarioExpectation.parse(ScenarioSection(parsing: json, source: "s.json", path: "expect"), scenario: "s")
    }

    @Test func aFullSectionParses() throws {
        let expectation = try Self.parse(
            """
            {"outcome": "success", "version": 2, "max-refetched": "64K", "resume-range": "exact",
             "if-range": "etag", "min-elapsed": "1s", "max-elapsed": 2.5, "max-connections": 3,
             "steps": [{"kill-at": "25%"}, {"pause-at": "1M", "pause-for": "250ms"}], "tags": ["slow"],
             "files": ["a", "b"], "concurrency": 2, "max-requests": 9}
            """)
        #expect(expectation.version == 2)
        #expect(expectation.maxRefetched == 64 << 10)
        #expect(expectation.range == .exact)
        #expect(expectation.ifRange == .etag)
        #expect(expectation.minElapsed == .seconds(1))
        #expect(expectation.maxElapsed == .milliseconds(2500))
        #expect(expectation.maxConnections == 3 && expectation.concurrency == 2 && expectation.maxRequests == 9)
        #expect(
            expectation.steps == [
                .killAndRestart(at: .percent(25)), .pause(at: .bytes(1 << 20), for: .milliseconds(250)),
            ])
        #expect(expectation.requiredCapabilities == [.killAndRestart, .pauseAndResume, .multipleFiles])
        #expect(expectation.tags == ["slow"])
        #expect(expectation.files == ["a", "b"])
        #expect(!expectation.leavesNoOutput)
    }

    @Test(arguments: [
        (#"{"outcome": "done"}"#, #"s.json:1:13: expect.outcome: "done" is not success, failure, cancelled or intact"#),
        (#"{"outcome": "success", "colour": "red"}"#, "s.json:1:34: expect.colour: unknown key (expected one of: "),
        (#"{"outcome": "failure", "failure": "http-200"}"#, #"s.json:1:35: expect.failure: "http-200" is not"#),
        (#"{"outcome": "success", "failure": "any"}"#, #"s.json:1:35: expect.failure: requires "outcome": "failure""#),
        (#"{"outcome": "success", "max-refetched": "lots"}"#, #"s.json:1:41: expect.max-refetched: "lots""#),
        (#"{"outcome": "success", "version": 1.5}"#, "s.json:1:35: expect.version: must be an integer of at least 1"),
        (#"{"outcome": "success", "version": 0}"#, "s.json:1:35: expect.version: must be an integer of at least 1"),
        (#"{"outcome": "success", "tags": "slow"}"#, "s.json:1:32: expect.tags: must be an array of strings"),
        (#"{"outcome": "success", "steps": {}}"#, "s.json:1:33: expect.steps: must be an array of step objects"),
        (
            "{\"outcome\": \"success\",\n \"steps\": [{\"kill-at\": \"1M\"}, {\"kill-at\": \"120%\"}]}",
            "s.json:2:43: expect.steps[1].kill-at: must be a size like 1M or a percentage like 25%"
        ),
        (#"{"outcome": "success", "steps": [3]}"#, "s.json:1:34: expect.steps[0]: must be an object, found a number"),
        (
            #"{"outcome": "success", "steps": [{"kill-at": "1M", "prefill": "1K"}]}"#,
            "s.json:1:34: expect.steps[0]: must have exactly one of kill-at, pause-at, cancel-at, prefill"
        ),
        (
            #"{"outcome": "success", "steps": [{"kill-at": "1M", "pause-for": "1s"}]}"#,
            "s.json:1:65: expect.steps[0].pause-for: requires pause-at"
        ),
        (#"{"outcome": "cancelled"}"#, #"s.json:1:13: expect.outcome: "cancelled" requires a cancel-at step"#),
        (#"{"version": 2}"#, "s.json:1:1: expect.outcome: is required: success, failure, cancelled or intact"),
        (#"["success"]"#, "s.json:1:1: expect: must be an object, found an array"),
    ])
    func badSectionsNameTheFileLineColumnAndKey(json: String, prefix: String) {
        #expect(throws: ConformanceError.self) { try Self.parse(json) }
        do {
            _ = try Self.parse(json)
        } catch let error as ConformanceError {
            #expect(error.message.hasPrefix(prefix), "\(error.message)")
            #expect(!error.message.contains("\n"))
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func aMissingSectionIsAnError() {
        #expect(throws: ConformanceError.invalidExpectation("s: no expect section")) {
            try ScenarioExpectation.parse(nil, scenario: "s")
        }
    }

    @Test func everyCatalogueScenarioHasAValidExpectation() throws {
        let catalogue = try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")
        #expect(catalogue.count >= 29)
        #expect(catalogue.first { $0.name == "version-change" }?.expectedVersion == 2)
        #expect(catalogue.filter(\.isSlow).map(\.name) == ["large-5g"])
    }
}
