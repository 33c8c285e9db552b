import Foundation
import Testing

@testable import Conformance

/// The HTML matrix links every run to its picture, in the page or on pages of their own, and stays self-contained.
@Suite struct HTMLReportTests {
    static func matrix() throws -> Matrix {
        let (entry, facts) = try RunTraceTests.spliced
        let trace = RunTrace(entry: entry, facts: facts)
        return Matrix(
            scenarios: ["version-change", "odd name"], clients: ["engine", "curl"],
            cells: [
                MatrixCell(
                    scenario: "version-change", client: "engine", result: .fail("spliced versions"),
                    elapsed: .milliseconds(400), trace: trace),
                MatrixCell(scenario: "version-change", client: "curl", result: .skipped("curl is not installed")),
                MatrixCell(scenario: "odd name", client: "engine", result: .pass, trace: trace),
            ],
            command: "rangecheck", descriptions: ["version-change": "The resource <changes> after a drop."])
    }

    /// Whether a page loads nothing from elsewhere: no script, no stylesheet link, no URL but the SVG namespace.
    static func isSelfContained(_ html: String) -> Bool {
        let withoutNamespace = html.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "")
        return !html.contains("<script") && !html.contains("src=") && !html.contains("<link")
            && !html.contains("@import") && !withoutNamespace.contains("http://")
            && !withoutNamespace.contains("https://") && !withoutNamespace.contains("url(http")
    }

    @Test func everyRunLinksToItsSectionInThePage() throws {
        let matrix = try Self.matrix()
        let html = Report.html(matrix)
        #expect(html.contains("<a href=\"#run-version-change-engine\">FAIL</a>"))
        #expect(html.contains("<section class=\"run\" id=\"run-version-change-engine\">"))
        #expect(html.contains("<a href=\"#run-odd_20name-engine\">pass</a>"))
        #expect(html.contains("id=\"run-odd_20name-engine\""))
        // A pair that did not run has no picture to link to.
        #expect(!html.contains("run-version-change-curl"))
        #expect(html.components(separatedBy: "<section class=\"run\"").count - 1 == 2)
        #expect(html.components(separatedBy: "<svg ").count - 1 == 2)
        // Each section's SVG ids are its own.
        #expect(html.contains("id=\"run-version-change-engine-twice\""))
        #expect(html.contains("id=\"run-odd_20name-engine-twice\""))
        #expect(html.contains("The resource &lt;changes&gt; after a drop."))
        #expect(html.contains(".run:target{display:block}"))
        #expect(html.contains("<a href=\"#matrix\">Back to the matrix</a>"))
        #expect(!html.contains("http-equiv=\"refresh\""))
        #expect(Self.isSelfContained(html))
    }

    @Test func theLivePageLinksToPagesAndRefreshes() throws {
        let matrix = try Self.matrix()
        var options = Report.HTMLOptions()
        options.refreshSeconds = 5
        options.detailLink = .page(prefix: "/_conformance/report/")
        let html = Report.html(matrix, options: options)
        #expect(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"))
        #expect(html.contains("<a href=\"/_conformance/report/version-change/engine\">FAIL</a>"))
        #expect(html.contains("<a href=\"/_conformance/report/odd%20name/engine\">pass</a>"))
        #expect(!html.contains("<section class=\"run\""))
        #expect(Self.isSelfContained(html))
    }

    @Test func theDetailPageHasEverythingAboutOneRun() throws {
        let matrix = try Self.matrix()
        let cell = try #require(matrix.cell(scenario: "version-change", client: "engine"))
        let page = Report.detailHTML(cell, matrix: matrix)
        #expect(page.hasPrefix("<!DOCTYPE html>"))
        #expect(page.contains("<title>version-change × engine over http: FAIL</title>"))
        #expect(page.contains("<p class=\"description\">The resource &lt;changes&gt; after a drop.</p>"))
        #expect(page.contains("<b class=\"verdict-fail\">FAIL</b> — spliced versions (0.400s)"))
        #expect(page.contains("<svg ") && page.contains("class=\"legend\""))
        #expect(page.contains("output content"))
        #expect(page.contains("<a href=\"../\">Back to the matrix</a>"))
        #expect(page.contains("<summary>Requests (2)</summary>"))
        var options = HTMLOptions()
        options.matrixLink = "/_conformance/report"
        #expect(
            Report.detailHTML(cell, matrix: matrix, options: options).contains(
                "<a href=\"/_conformance/report\">Back to the matrix</a>"))
        #expect(Self.isSelfContained(page))
        let skipped = try #require(matrix.cell(scenario: "version-change", client: "curl"))
        #expect(Report.detailHTML(skipped, matrix: matrix).contains("This pair did not run"))
    }

    @Test func theJSONReportCarriesDescriptions() throws {
        let json = Report.json(try Self.matrix())
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let descriptions = try #require(document["descriptions"] as? [String: String])
        #expect(descriptions == ["version-change": "The resource <changes> after a drop."])
    }
}

/// The live-page sample of docs/conformance.md, compiled (and run by the test below).
private func livePageDocSample(_ matrix: Matrix) -> (String, String?) {
    // doc-sample: docs/conformance.md
    var options = Report.HTMLOptions()
    options.refreshSeconds = 5  // <meta http-equiv="refresh">
    options.detailLink = .page(prefix: "/_conformance/report/")  // a cell links to PREFIX/SCENARIO/CLIENT
    let page = Report.html(matrix, options: options)
    let detail = matrix.cell(scenario: "version-change", client: "engine").map {
        Report.detailHTML($0, matrix: matrix)  // its back link is ../, the prefix
    }
    // end doc-sample
    return (page, detail)
}

extension HTMLReportTests {
    @Test func theDocSampleRendersBothPages() throws {
        let (page, detail) = livePageDocSample(try Self.matrix())
        #expect(page.contains("/_conformance/report/version-change/engine"))
        #expect(detail?.contains("<svg ") == true)
    }
}
