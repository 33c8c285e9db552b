import Conformance
import Foundation
import RangeServer
import Testing

/// Issue 27, item 2: every row carries its reason (`rfc`, `seen-in`), and every report shows it.
@Suite struct RowReferencesTests {
    private static func entry(_ json: String, name: String = "s") throws -> CatalogueEntry {
        let scenario = try Scenario.parse(Array(json.utf8), name: name, source: "\(name).json")
        return try CatalogueEntry(scenario: scenario, root: "/nonexistent")
    }

    @Test("a catalogue row without rfc or seen-in is refused in one line naming the row and the key")
    func theCatalogueRequiresBoth() throws {
        let head = #"{"description": "d", "resource": "/bytes/1M", "attempts": [], "expect": {"outcome": "success"}"#
        for (json, key) in [
            (head + #", "seen-in": {"none": "x"}}"#, "rfc"), (head + #", "rfc": ["RFC 9110 §14.2"]}"#, "seen-in"),
        ] {
            do {
                _ = try Self.entry(json, name: "row")
                Issue.record("expected an error for a row without \(key)")
            } catch let error as ConformanceError {
                #expect(error.message.hasPrefix("row: no \"\(key)\" key"), "\(error.message)")
                #expect(!error.message.contains("\n"))
            }
        }
        let entry = try Self.entry(head + #", "rfc": ["RFC 9110 §14.2"], "seen-in": ["curl/curl#1163"]}"#)
        #expect(entry.references == RowReferences(rfc: .cited(["RFC 9110 §14.2"]), seenIn: .cited(["curl/curl#1163"])))
    }

    @Test("a malformed reference in a catalogue row names the file, its line and column, and the key")
    func aMalformedReferenceNamesTheFileAndKey() throws {
        let json = """
            {"description": "d", "resource": "/bytes/1M", "attempts": [], "expect": {"outcome": "success"},
             "rfc": ["RFC 9110 section 14.2"], "seen-in": {"none": "x"}}
            """
        do {
            _ = try Self.entry(json, name: "row")
            Issue.record("expected an error")
        } catch let error as RangeServerError {
            #expect(error.message.hasPrefix("row.json:2:10: rfc[0]: \"RFC 9110 section 14.2\""), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test("every row of the shipped catalogue carries both, and every reference links somewhere")
    func theShippedCatalogueCarriesBoth() throws {
        let catalogue = try CatalogueEntry.load(
            directory: repositoryPath("fixtures/scenarios"), root: repositoryPath("fixtures/files"))
        #expect(catalogue.count >= 50)
        for entry in catalogue {
            for reference in entry.references.rfc.references + entry.references.seenIn.references {
                #expect(RowReferences.url(of: reference) != nil, "\(entry.name): \(reference)")
            }
        }
        #expect(CatalogueEntry.references(catalogue).count == catalogue.count)
    }

    @Test("references link to rfc-editor.org and GitHub")
    func links() {
        #expect(RowReferences.url(of: "RFC 9110 §13.1.5") == "https://www.rfc-editor.org/rfc/rfc9110#section-13.1.5")
        #expect(RowReferences.url(of: "RFC 9110 §A.2") == "https://www.rfc-editor.org/rfc/rfc9110#appendix-A.2")
        #expect(RowReferences.url(of: "curl/curl#1163") == "https://github.com/curl/curl/issues/1163")
        #expect(RowReferences.url(of: "not a reference") == nil)
    }

    /// Two rows, one with references of both kinds and one whose seen-in says why there are none.
    static var matrix: Matrix {
        var matrix = Matrix(
            scenarios: ["ignore-range", "plain", "stall"], clients: ["curl"],
            cells: [
                MatrixCell(
                    scenario: "ignore-range", client: "curl", result: .fail("appended a 200"),
                    trace: RunTrace(
                        scenario: "ignore-range", description: "", resourceLength: 1, versions: [1],
                        expectedVersion: 1, requests: [], outputs: [], spanMilliseconds: 0),
                    reasons: [Violation("appended a 200", grade: .corrupt)]),
                MatrixCell(scenario: "plain", client: "curl", result: .pass),
            ])
        matrix.references = [
            "ignore-range": RowReferences(
                rfc: .cited(["RFC 9110 §14.2", "RFC 9110 §15.3.1"]), seenIn: .cited(["rust-lang/rustup#4710"])),
            "plain": RowReferences(rfc: .cited(["RFC 9110 §9.3.1"]), seenIn: .none(reason: "a baseline | row")),
            "stall": RowReferences(rfc: .cited(["RFC 9110 §14.2"]), seenIn: .none(reason: "not run here")),
        ]
        return matrix
    }

    @Test("Markdown: each row in the table carries a footnote naming what it rests on, linked")
    func markdownFootnotes() {
        let markdown = Report.markdown(Self.matrix)
        #expect(markdown.contains("| ignore-range[^ignore-range] | **CORRUPT**: appended a 200 |"), "\(markdown)")
        #expect(markdown.contains("| plain[^plain] | pass |"))
        #expect(
            markdown.contains(
                "[^ignore-range]: rfc: [RFC 9110 §14.2](https://www.rfc-editor.org/rfc/rfc9110#section-14.2), "
                    + "[RFC 9110 §15.3.1](https://www.rfc-editor.org/rfc/rfc9110#section-15.3.1); seen in: "
                    + "[rust-lang/rustup#4710](https://github.com/rust-lang/rustup/issues/4710)\n"))
        #expect(
            markdown.contains(
                "[^plain]: rfc: [RFC 9110 §9.3.1](https://www.rfc-editor.org/rfc/rfc9110#section-9.3.1); "
                    + "seen in: none (a baseline \\| row)\n"))
        // A row the table does not show (no cell ran) gets no footnote.
        #expect(!markdown.contains("[^stall]"))
    }

    @Test("JSON: references by scenario, each key a list or {none}, only for the matrix's rows")
    func json() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(Self.matrix).utf8)) as? [String: Any])
        let references = try #require(document["references"] as? [String: [String: Any]])
        #expect(Set(references.keys) == ["ignore-range", "plain", "stall"])
        #expect(references["ignore-range"]?["rfc"] as? [String] == ["RFC 9110 §14.2", "RFC 9110 §15.3.1"])
        #expect(references["ignore-range"]?["seen-in"] as? [String] == ["rust-lang/rustup#4710"])
        #expect((references["plain"]?["seen-in"] as? [String: String]) == ["none": "a baseline | row"])
        var fewer = Self.matrix
        fewer.scenarios = ["plain"]
        let filtered = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(fewer).utf8)) as? [String: Any])
        #expect((filtered["references"] as? [String: Any])?.keys.sorted() == ["plain"])
    }

    @Test("HTML: the detail view lists the row's RFC sections and reports, each a link")
    func htmlDetail() throws {
        let matrix = Self.matrix
        let cell = try #require(matrix.cell(scenario: "ignore-range", client: "curl"))
        for html in [Report.detailHTML(cell, matrix: matrix), Report.html(matrix)] {
            #expect(
                html.contains(
                    "<dl class=\"references\"><dt>RFC</dt><dd><a href=\"https://www.rfc-editor.org/rfc/rfc9110#"
                        + "section-14.2\">RFC 9110 §14.2</a>, <a href=\"https://www.rfc-editor.org/rfc/rfc9110#"
                        + "section-15.3.1\">RFC 9110 §15.3.1</a></dd><dt>Seen in</dt><dd><a href=\"https://github.com/"
                        + "rust-lang/rustup/issues/4710\">rust-lang/rustup#4710</a></dd></dl>"), "\(html)")
        }
        var bare = matrix
        bare.references = [:]
        #expect(!Report.detailHTML(cell, matrix: bare).contains("class=\"references\""))
    }

    @Test("the service's scenario listing carries rfc and seen-in for every row")
    func serviceListing() async throws {
        try await withService { _, _, client in
            let answer = try await client.send("GET", "/_conformance/scenarios")
            let scenarios = try #require(answer.object["scenarios"] as? [[String: Any]])
            #expect(!scenarios.isEmpty)
            for scenario in scenarios {
                #expect(scenario["rfc"] != nil && scenario["seen-in"] != nil, "\(scenario["name"] ?? "?")")
            }
            let plain = try #require(scenarios.first { $0["name"] as? String == "plain" })
            #expect((plain["seen-in"] as? [String: String])?["none"]?.isEmpty == false)
            let ignoreRange = try #require(scenarios.first { $0["name"] as? String == "ignore-range" })
            #expect((ignoreRange["rfc"] as? [String])?.contains("RFC 9110 §14.2") == true)
        }
    }
}
