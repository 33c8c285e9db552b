import Foundation
import RangeServer
import Testing

@testable import Conformance

/// A scenario whose steps change the resource's `size`: the harness knows each version's length, and the judge holds
/// an output to the latest version's bytes at its length.
@Suite struct VersionLengthTests {
    static let megabyte: UInt64 = 1 << 20

    /// A catalogue row over `/bytes/4M?seed=5` with these attempts.
    static func entry(_ attempts: String, expect: String = #"{"outcome": "success"}"#) throws -> CatalogueEntry {
        let json = """
            {"description": "x", "resource": "/bytes/4M?seed=5", "attempts": \(attempts), "expect": \(expect),
             "rfc": ["RFC 9110 §8.8.3"], "seen-in": ["yt-dlp/yt-dlp#12994"]}
            """
        let scenario = try Scenario.parse(Array(json.utf8), name: "shrink", source: "shrink.json")
        return try CatalogueEntry(scenario: scenario, root: "/nonexistent")
    }

    @Test func eachVersionHasTheLengthItWasLastServedWith() throws {
        let shrink = try Self.entry(#"[ {"drop-after": "1M"}, {"version": 2, "size": "3M"} ]"#)
        #expect(shrink.versions == [1, 2])
        #expect(shrink.versionLengths == [1: 4 * Self.megabyte, 2: 3 * Self.megabyte])
        #expect(shrink.expectedVersion == 2 && shrink.expectedLength == 3 * Self.megabyte)
        #expect(shrink.expectedContent == .generated(length: 3 * Self.megabyte, seed: 5))
        // Attribution reaches the longest length served, so a stale tail of version 1 is recognised.
        #expect(shrink.attributionContent.length == 4 * Self.megabyte)
        // The same version grown, later; and expect.version picks an earlier one at its own length.
        let grow = try Self.entry(
            #"[ {"size": "2M"}, {"size": "5M"} ]"#, expect: #"{"outcome": "success", "version": 1}"#)
        #expect(grow.versionLengths == [1: 5 * Self.megabyte])
        #expect(grow.expectedLength == 5 * Self.megabyte)
        let plain = try Self.entry(#"[ {"version": 2} ]"#)
        #expect(plain.expectedLength == 4 * Self.megabyte && plain.versionLengths == [1: 4 << 20, 2: 4 << 20])
    }

    /// The facts of a run over `entry` with one output.
    static func facts(_ entry: CatalogueEntry, output: OutputFacts) -> RunFacts {
        RunFacts(
            entries: [], outputs: [output], resourceLength: entry.expectedLength,
            expectedVersion: entry.expectedVersion, exit: .success, elapsed: .seconds(1))
    }

    /// Writes `parts` (version, offset, count) of the scenario's content to a file and inspects it as the runner does.
    static func inspect(
        _ entry: CatalogueEntry, _ parts: [(version: Int, offset: UInt64, count: UInt64)]
    ) throws
        -> OutputFacts
    {
        let path = NSTemporaryDirectory() + "version-length-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: path) }
        var bytes: [UInt8] = []
        for part in parts {
            bytes += ContentGenerator(seed: 5, version: UInt64(part.version)).bytes(
                offset: part.offset, count: Int(part.count))
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return OutputInspector.inspect(
            path: path, reference: entry.attributionContent, versions: entry.versions,
            expectedVersion: entry.expectedVersion, computeDigest: false)
    }

    @Test func aCorrectShrunkDownloadPasses() throws {
        let entry = try Self.entry(#"[ {"drop-after": "1M"}, {"version": 2, "size": "3M"} ]"#)
        let output = try Self.inspect(entry, [(2, 0, 3 * Self.megabyte)])
        #expect(output.size == 3 * Self.megabyte)
        let expectation = ScenarioExpectation(outcome: .success)
        #expect(Judge.violations(of: expectation, in: Self.facts(entry, output: output)) == [])
    }

    @Test func aSpliceWithAStaleTailIsCorrupt() throws {
        let entry = try Self.entry(#"[ {"drop-after": "1M"}, {"version": 2, "size": "3M"} ]"#)
        // Version 2 written over a whole version 1 without truncating it: its last megabyte stays.
        let output = try Self.inspect(entry, [(2, 0, 3 * Self.megabyte), (1, 3 * Self.megabyte, Self.megabyte)])
        #expect(output.segments.map(\.version) == [2, 1])
        let judgement = Judge.judgement(
            of: ScenarioExpectation(outcome: .success), in: Self.facts(entry, output: output))
        #expect(judgement.grade == .corrupt)
        #expect(
            judgement.reasons.map(\.reason) == [
                "spliced versions: 0-3145727 v2, 3145728-4194303 v1",
                "\(output.name) is 4194304 bytes, expected 3145728",
            ])
        // The same version shrunk, its old tail kept: every byte is version 2's, only the length gives it away.
        let sameVersion = try Self.entry(#"[ {"drop-after": "1M"}, {"size": "3M"} ]"#)
        let kept = try Self.inspect(sameVersion, [(1, 0, 4 * Self.megabyte)])
        let keptJudgement = Judge.judgement(
            of: ScenarioExpectation(outcome: .success), in: Self.facts(sameVersion, output: kept))
        #expect(keptJudgement.grade == .corrupt)
        #expect(keptJudgement.reasons.map(\.reason) == ["\(kept.name) is 4194304 bytes, expected 3145728"])
    }

    @Test func aGrownDownloadIsAttributedPastTheFirstLength() throws {
        let entry = try Self.entry(#"[ {"drop-after": "1M"}, {"size": "5M"} ]"#)
        let output = try Self.inspect(entry, [(1, 0, 5 * Self.megabyte)])
        #expect(output.segments.map(\.version) == [1])
        #expect(
            Judge.violations(of: ScenarioExpectation(outcome: .success), in: Self.facts(entry, output: output)) == [])
    }
}
