import Foundation
import RangeServer
import Testing

@testable import Conformance

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The SVG is XML a parser accepts, with a row per request and stripes where bytes went twice.
@Suite struct TimelineTests {
    /// Counts the elements of a document, and the groups by class.
    final class Census: NSObject, XMLParserDelegate {
        var elements: [String: Int] = [:]
        var groups: [String: Int] = [:]
        var titles = 0

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            elements[elementName, default: 0] += 1
            if elementName == "g", let name = attributes["class"] { groups[name, default: 0] += 1 }
        }
    }

    /// Parses `text`; nil when it is not well-formed.
    static func census(_ text: String) -> Census? {
        let parser = XMLParser(data: Data(text.utf8))
        let census = Census()
        parser.delegate = census
        return parser.parse() ? census : nil
    }

    @Test func theSVGIsWellFormedWithOneRowPerRequest() throws {
        let (entry, facts) = try RunTraceTests.spliced
        var trace = RunTrace(entry: entry, facts: facts)
        // A name and a header that need escaping, to prove the text is escaped.
        trace.scenario = "a<b & \"c\""
        trace.requests[1].ifRange = "\"x\" <&>"
        let svg = Timeline.svg(trace)
        let census = try #require(Self.census(svg), "not well-formed XML:\n\(svg)")
        #expect(census.elements["svg"] == 1)
        #expect(census.groups["request"] == trace.requests.count)
        #expect(census.groups["output"] == 1)
        // One title for the whole picture, one per request, one per output.
        #expect(census.elements["title"] == 1 + trace.requests.count + 1)
        #expect(census.elements["pattern"] == 2)
        #expect(!svg.contains("<script") && !svg.contains("<style") && !svg.contains("href"))
    }

    @Test func anEmptyRunStillDrawsAndSaysSo() throws {
        let entry = try RunTraceTests.catalogue(RunTraceTests.dropThenResume)
        let trace = RunTrace(entry: entry, facts: RunTraceTests.facts([], outputs: [.missing("s.bin")]))
        let svg = Timeline.svg(trace)
        let census = try #require(Self.census(svg))
        #expect(census.groups["request"] == nil)
        #expect(svg.contains("no request reached the server"))
        #expect(svg.contains("no file"))
    }

    @Test func timelineIdsDifferPerPrefixSoAPageCanHoldMany() throws {
        let (entry, facts) = try RunTraceTests.spliced
        let trace = RunTrace(entry: entry, facts: facts)
        #expect(Timeline.svg(trace, idPrefix: "one").contains("id=\"one-twice\""))
        #expect(Timeline.svg(trace) == Timeline.svg(trace))
        #expect(Timeline.approximateSize(1536) == "1.5 KiB")
        #expect(Timeline.approximateSize(4 << 20) == "4 MiB")
        #expect(Timeline.approximateSize(12) == "12 B")
        #expect(Timeline.seconds(1234) == "1.234 s" && Timeline.seconds(5) == "0.005 s")
    }
}
