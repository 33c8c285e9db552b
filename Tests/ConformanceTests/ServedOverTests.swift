import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Conformance

/// A column served over a file of its own kind (`serve-over`, pip's wheel): each row keeps its steps and is judged
/// against the file's bytes at `/scenario/NAME/RUN/~/FILE`, or is n/a with why.
@Suite("Rows served over a file")
struct ServedOverTests {
    static let root = BuiltProducts.repositoryRoot + "/fixtures/files"
    static let wheel = "wheels/rangecheck_probe-1.0-py3-none-any.whl"
    static let changes = "changes the representation between attempts, which a file cannot"

    static func entry(
        _ attempts: String, resource: String = "/bytes/2M?seed=5", extra: String = "",
        expect: String = #"{"outcome": "success"}"#
    ) throws -> CatalogueEntry {
        let json = """
            {"description": "x", "resource": "\(resource)", "attempts": \(attempts)\(extra),
             "expect": \(expect), "rfc": ["RFC 9110 §14.2"], "seen-in": ["pypa/pip#14131"]}
            """
        let scenario = try Scenario.parse(Array(json.utf8), name: "row", source: "row.json")
        return try CatalogueEntry(scenario: scenario, root: root)
    }

    @Test(
        "a row over the wheel keeps its steps, is judged against the wheel's bytes, and its URL ends in the wheel's name"
    )
    func servedOverTheWheel() throws {
        let row = try Self.entry(#"[ {"drop-after": "768K"}, {} ]"#)
        let served = try row.served(over: Self.wheel, root: Self.root, client: "pip").get()
        #expect(served.name == "row")
        #expect(served.scenario.routes[""]?.attempts == row.scenario.routes[""]?.attempts)
        let size = try #require(
            try FileManager.default.attributesOfItem(atPath: "\(Self.root)/\(Self.wheel)")[.size] as? Int)
        #expect(served.expectedLength == UInt64(size))
        let transfers = served.transfers(base: "http://127.0.0.1:9/scenario/row/pip-x", outputs: "/w/out")
        #expect(
            transfers.map(\.url) == [
                "http://127.0.0.1:9/scenario/row/pip-x/~/wheels/rangecheck_probe-1.0-py3-none-any.whl"
            ])
        #expect(transfers.map(\.output) == ["/w/out/rangecheck_probe-1.0-py3-none-any.whl"])
        // The catalogue's drop row, whole.
        let catalogue = try CatalogueEntry.load(
            directory: BuiltProducts.repositoryRoot + "/fixtures/scenarios", root: Self.root)
        let drop = try #require(catalogue.first { $0.name == "drop-then-resume" })
        #expect((try? drop.served(over: Self.wheel, root: Self.root, client: "pip").get()) != nil)
    }

    @Test(
        "a row that serves several files, changes the representation, redirects elsewhere or is longer than the file is n/a with why",
        arguments: [
            (#"[ {"drop-after": "1M"}, {"version": 2} ]"#, "", ServedOverTests.changes),
            (#"[ {"drop-after": "1M"}, {"size": "1M"} ]"#, "", ServedOverTests.changes),
            (#"[ {"redirect": "/bytes/1M"} ]"#, "", "redirects to a resource or listener of its own"),
            (#"[ {"redirect": "blackhole:/bytes/1M"}, {} ]"#, "", "redirects to a resource or listener of its own"),
            (#"[ {} ]"#, #", "routes": {"a.bin": {"attempts": []}}"#, "the row serves several files"),
        ])
    func notApplicable(attempts: String, extra: String, reason: String) throws {
        let row = try Self.entry(
            attempts, extra: extra,
            expect: extra.isEmpty ? #"{"outcome": "success"}"# : #"{"outcome": "success", "files": ["a.bin"]}"#)
        guard case .failure(let error) = row.served(over: Self.wheel, root: Self.root, client: "pip") else {
            Issue.record("served \(attempts)")
            return
        }
        #expect(
            error.message.hasPrefix("pip downloads one rangecheck_probe-1.0-py3-none-any.whl at a URL of its name: "))
        #expect(error.message.hasSuffix(reason), "\(error.message)")
    }

    @Test("a row longer than the file, or a file missing below the root, is n/a naming both")
    func tooLongOrMissing() throws {
        let long = try Self.entry("[ {} ]", resource: "/bytes/16M")
        guard case .failure(let error) = long.served(over: Self.wheel, root: Self.root, client: "pip") else {
            Issue.record("served a 16M row over the wheel")
            return
        }
        #expect(
            error.message.hasSuffix(
                "its resource is 16777216 bytes, rangecheck_probe-1.0-py3-none-any.whl only 8390044"))
        let row = try Self.entry("[ {} ]")
        guard case .failure(let missing) = row.served(over: "wheels/none.whl", root: Self.root, client: "pip") else {
            Issue.record("served a missing file")
            return
        }
        #expect(missing.message.hasPrefix("pip: wheels/none.whl below \(Self.root): "), "\(missing.message)")
    }

    @Test("serve-over must be a path below the root; a mistake is one line at the key")
    func definitionKey() throws {
        for bad in ["/etc/passwd", "../x.whl", "a//b.whl", "a/~/b.whl", ""] {
            let text = ClientDefinitionTests.minimal.replacingOccurrences(
                of: #""arguments""#, with: #""serve-over": "\#(bad)", "arguments""#)
            do {
                _ = try ClientDefinitionTests.load(text)
                Issue.record("accepted \(bad)")
            } catch let error as ConformanceError {
                #expect(error.message.contains("client.serve-over: must be a file's path below the server's root"))
            }
        }
        let good = ClientDefinitionTests.minimal.replacingOccurrences(
            of: #""arguments""#, with: #""serve-over": "\#(Self.wheel)", "arguments""#)
        let definition = try #require(try ClientDefinitionTests.load(good).first)
        #expect(definition.servedOver == Self.wheel)
        #expect(definition.client().servedOver == Self.wheel)
    }
}
