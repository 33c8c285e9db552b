import Conformance
import RangeServer
import Testing

@Suite struct ExpectationTests {
    static func parse(_ members: [String: JSONValue]) throws(ConformanceError) -> ScenarioExpectation {
        try ScenarioExpectation.parse(.object(members), scenario: "s")
    }

    @Test func aFullSectionParses() throws {
        let expectation = try Self.parse([
            "outcome": .string("success"), "version": .number(2), "max-refetched": .string("64K"),
            "resume-range": .string("exact"), "if-range": .string("etag"), "min-elapsed": .string("1s"),
            "max-connections": .number(3), "steps": .array([.object(["kill-at": .string("25%")])]),
            "tags": .array([.string("slow")]),
        ])
        #expect(expectation.version == 2)
        #expect(expectation.maxRefetched == 64 << 10)
        #expect(expectation.range == .exact)
        #expect(expectation.minElapsed == .seconds(1))
        #expect(expectation.steps == [.killAndRestart(at: .percent(25))])
        #expect(expectation.requiredCapabilities == .killAndRestart)
        #expect(expectation.tags == ["slow"])
    }

    @Test(arguments: [
        (["outcome": JSONValue.string("done")], "s: expect.outcome: \"done\" is not success, failure or cancelled"),
        (["outcome": .string("success"), "colour": .string("red")], "s: expect.colour: unknown key"),
        (["outcome": .string("failure"), "failure": .string("http-200")], "s: expect.failure: \"http-200\" is not"),
        (["outcome": .string("success"), "max-refetched": .string("lots")], "s: expect.max-refetched: \"lots\""),
        (
            ["outcome": .string("success"), "steps": .array([.object(["kill-at": .string("120%")])])],
            "s: expect.steps[0].kill-at"
        ),
        (["outcome": .string("cancelled")], "s: expect.outcome: \"cancelled\" requires a cancel-at step"),
    ])
    func badSectionsNameTheKey(members: [String: JSONValue], prefix: String) {
        #expect(throws: ConformanceError.self) { try Self.parse(members) }
        do {
            _ = try Self.parse(members)
        } catch {
            #expect(error.message.hasPrefix(prefix), "\(error.message)")
        }
    }

    @Test func everyCatalogueScenarioHasAValidExpectation() throws {
        let catalogue = try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")
        #expect(catalogue.count >= 29)
        #expect(catalogue.first { $0.name == "version-change" }?.expectedVersion == 2)
        #expect(catalogue.filter(\.isSlow).map(\.name) == ["large-5g"])
    }
}
