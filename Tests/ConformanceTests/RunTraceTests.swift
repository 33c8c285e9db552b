import Foundation
import RangeServer
import Testing

@testable import Conformance

/// The picture's facts, from fabricated journals: what each request asked for and got, and what the output holds.
@Suite struct RunTraceTests {
    static let length: UInt64 = 4 << 20
    static let megabyte: UInt64 = 1 << 20
    static func etag(_ version: Int) -> String { "\"b400000-b-v\(version)\"" }

    /// A scenario parsed from its JSON, as the catalogue loads it.
    static func catalogue(_ json: String, name: String = "s") throws -> CatalogueEntry {
        let scenario = try Scenario.parse(Array(json.utf8), name: name, source: "\(name).json")
        return try CatalogueEntry(scenario: scenario, root: "/nonexistent")
    }

    /// A journal entry arriving at `arrived` ms and ending at `ended` ms past a fixed second.
    static func entry(
        seq: Int, arrival: Int, route: String? = "", attempt: Int? = nil, status: Int = 200, sent: UInt64,
        planned: UInt64? = nil, outcome: JournalOutcome = .complete, request: [String: String] = [:],
        response: [String: String], faults: [String] = [], arrived: Int, ended: Int
    ) -> JournalEntry {
        func stamp(_ millisecond: Int) -> String {
            JournalEntry.timestamp(
                secondsSince1970: 1_800_000_000 + Int64(millisecond / 1000), milliseconds: millisecond % 1000)
        }
        return JournalEntry(
            seq: seq, time: stamp(ended), method: "GET", target: "/scenario/s/run" + (route.map { "/\($0)" } ?? ""),
            scenario: "s", run: "run", route: route, attempt: attempt ?? arrival, requestHeaders: request,
            status: status, responseHeaders: response, bodyBytesPlanned: planned ?? sent, bodyBytesSent: sent,
            outcome: outcome, faults: faults, connection: arrival, peer: "127.0.0.1:1", arrival: arrival,
            arrivalTime: stamp(arrived))
    }

    static func facts(_ entries: [JournalEntry], outputs: [OutputFacts]) -> RunFacts {
        RunFacts(
            entries: entries, outputs: outputs, resourceLength: length, expectedVersion: 1, exit: .success,
            elapsed: .seconds(1))
    }

    static let dropThenResume = """
        {"description": "Drops at 1M, then resumes.", "resource": "/bytes/4M?seed=11",
         "rfc": {"none": "a test row"}, "seen-in": {"none": "a test row"},
         "attempts": [{"drop-after": "1M"}, {}], "expect": {"outcome": "success"}}
        """

    /// The resume after a drop, journalled in the order the responses ended (the resume first, the drop later).
    static var resumed: [JournalEntry] {
        [
            entry(
                seq: 1, arrival: 2, status: 206, sent: 3 * megabyte,
                request: ["range": "bytes=1048576-", "if-range": etag(1)],
                response: ["etag": etag(1), "content-range": "bytes 1048576-4194303/4194304"], arrived: 300,
                ended: 900),
            entry(
                seq: 2, arrival: 1, sent: megabyte, planned: length, outcome: .dropped, response: ["etag": etag(1)],
                faults: ["drop-after=1M"], arrived: 100, ended: 950),
        ]
    }

    @Test func aResumeAfterADropIsTwoRequestsInArrivalOrder() throws {
        let entry = try Self.catalogue(Self.dropThenResume)
        let output = OutputFacts(
            name: "s.bin", exists: true, size: Self.length,
            segments: [ContentSegment(range: 0..<Self.length, version: 1)])
        let trace = RunTrace(entry: entry, facts: Self.facts(Self.resumed, outputs: [output]))
        #expect(trace.description == "Drops at 1M, then resumes.")
        #expect(trace.resourceLength == Self.length && trace.versions == [1] && trace.expectedVersion == 1)
        #expect(trace.requests.map(\.order) == [1, 2])
        let (drop, resume) = (trace.requests[0], trace.requests[1])
        #expect(drop.arrival == 1 && drop.status == 200 && drop.outcome == .dropped)
        #expect(drop.requested.isEmpty && drop.rangeHeader == nil)
        #expect(drop.sent == RunTrace.ByteSpan(start: 0, end: Self.megabyte))
        #expect(drop.bodyBytesPlanned == Self.length && drop.faults == ["drop-after=1M"])
        #expect(drop.startMilliseconds == 0 && drop.endMilliseconds == 850)
        #expect(resume.status == 206 && resume.outcome == .complete)
        #expect(resume.requested == [RunTrace.ByteSpan(start: Self.megabyte, end: Self.length)])
        #expect(resume.ifRange == Self.etag(1))
        #expect(resume.sent == RunTrace.ByteSpan(start: Self.megabyte, end: Self.length))
        #expect(resume.sentTwice.isEmpty)
        #expect(resume.startMilliseconds == 200 && resume.endMilliseconds == 800)
        #expect(trace.requests.allSatisfy { $0.version == 1 && $0.validator == Self.etag(1) })
        #expect(trace.spanMilliseconds == 850)
        #expect(trace.outputs.first?.splices == [])
    }

    static let versionChange = """
        {"description": "The resource changes after a drop.", "resource": "/bytes/4M?seed=11",
         "rfc": {"none": "a test row"}, "seen-in": {"none": "a test row"},
         "attempts": [{"drop-after": "1M"}, {"version": 2, "ignore-if-range": true}],
         "expect": {"outcome": "success", "version": 2}}
        """

    /// A server that ignores If-Range splices version 2 onto version 1's first megabyte.
    static var spliced: (CatalogueEntry, RunFacts) {
        get throws {
            let entry = try catalogue(versionChange)
            let entries = [
                Self.entry(
                    seq: 1, arrival: 1, sent: megabyte, planned: length, outcome: .dropped,
                    response: ["etag": etag(1)], arrived: 0, ended: 100),
                Self.entry(
                    seq: 2, arrival: 2, status: 206, sent: 3 * megabyte,
                    request: ["range": "bytes=1048576-", "if-range": etag(1)],
                    response: ["etag": etag(2), "content-range": "bytes 1048576-4194303/4194304"], arrived: 150,
                    ended: 400),
            ]
            let output = OutputFacts(
                name: "s.bin", exists: true, size: length,
                segments: [
                    ContentSegment(range: 0..<megabyte, version: 1),
                    ContentSegment(range: megabyte..<length, version: 2),
                ])
            return (entry, facts(entries, outputs: [output]))
        }
    }

    @Test func aVersionChangeSpliceHasTwoVersionsAndARedSplice() throws {
        let (entry, facts) = try Self.spliced
        let trace = RunTrace(entry: entry, facts: facts)
        #expect(trace.versions == [1, 2] && trace.expectedVersion == 2)
        #expect(trace.requests.map(\.version) == [1, 2])
        #expect(trace.requests.map(\.validator) == [Self.etag(1), Self.etag(2)])
        // Another version's bytes are not bytes sent twice.
        #expect(trace.requests.allSatisfy { $0.sentTwice.isEmpty })
        #expect(trace.outputs.first?.splices == [Self.megabyte])
        let svg = Timeline.svg(trace, idPrefix: "t")
        let palette = TimelinePalette(trace)
        let first = palette.colour(of: .version(1))
        let second = palette.colour(of: .version(2))
        #expect(first != second)
        #expect(svg.components(separatedBy: "fill=\"\(first)\"").count > 2)
        #expect(svg.components(separatedBy: "fill=\"\(second)\"").count > 2)
        // The splice: a red line in the content map, and its caption in red.
        #expect(svg.contains("stroke=\"\(TimelinePalette.alarm)\" stroke-width=\"3\""))
        #expect(svg.contains("spliced: v1 0-1048575 · v2 1048576-4194303"))
    }

    @Test func theVersionIsTheScenarioStepsNotTheETagsWhenItCanBeTold() throws {
        let entry = try Self.catalogue(
            """
            {"description": "d", "resource": "/bytes/4M?seed=11&version=3",
             "rfc": {"none": "a test row"}, "seen-in": {"none": "a test row"},
             "attempts": [{"etag-salt": "edge1"}, {"version": 5}], "expect": {"outcome": "success"}}
            """)
        let salted = Self.entry(
            seq: 1, arrival: 1, sent: 10, response: ["etag": "\"b400000-b-v3-edge1\""], arrived: 0, ended: 1)
        #expect(RunTrace.servedVersion(salted, in: entry) == 3)
        var second = salted
        second.attempt = 2
        #expect(RunTrace.servedVersion(second, in: entry) == 5)
        var unknownRoute = salted
        unknownRoute.route = nil
        unknownRoute.responseHeaders = ["etag": "W/\"b400000-b-v4-edge2\""]
        #expect(RunTrace.servedVersion(unknownRoute, in: entry) == 4)
        var redirect = salted
        redirect.status = 302
        #expect(RunTrace.servedVersion(redirect, in: entry) == nil)
    }

    @Test func bytesSentTwiceAreMarkedAndHatched() throws {
        let entry = try Self.catalogue(Self.dropThenResume)
        let entries = [
            Self.entry(
                seq: 1, arrival: 1, sent: 2 * Self.megabyte, planned: Self.length, outcome: .reset,
                response: ["etag": Self.etag(1)], arrived: 0, ended: 100),
            Self.entry(
                seq: 2, arrival: 2, status: 206, sent: 3 * Self.megabyte,
                request: ["range": "bytes=1048576-", "if-range": Self.etag(1)],
                response: ["etag": Self.etag(1), "content-range": "bytes 1048576-4194303/4194304"], arrived: 120,
                ended: 300),
        ]
        let trace = RunTrace(entry: entry, facts: Self.facts(entries, outputs: []))
        #expect(trace.requests[0].sentTwice.isEmpty)
        #expect(trace.requests[1].sentTwice == [RunTrace.ByteSpan(start: Self.megabyte, end: 2 * Self.megabyte)])
        let hatch = "fill=\"url(#t-twice)\""
        // The legend's swatch, and one stripe over the second request's bar.
        #expect(Timeline.svg(trace, idPrefix: "t").components(separatedBy: hatch).count - 1 == 2)
        let (clean, cleanFacts) = (entry, Self.facts(Self.resumed, outputs: []))
        #expect(
            Timeline.svg(RunTrace(entry: clean, facts: cleanFacts), idPrefix: "t").components(separatedBy: hatch)
                .count - 1 == 1)
        #expect(Timeline.summary(trace.requests[1]).contains("1 MiB sent twice"))
    }

    @Test func aRedirectHopIsListedWithItsLocation() throws {
        let entry = try Self.catalogue(
            """
            {"description": "One hop.", "resource": "/bytes/4M?seed=24",
             "rfc": {"none": "a test row"}, "seen-in": {"none": "a test row"},
             "attempts": [{"redirect": "final", "redirect-code": 307}],
             "routes": {"final": {"attempts": [{}]}}, "expect": {"outcome": "success"}}
            """)
        let entries = [
            Self.entry(
                seq: 1, arrival: 1, status: 307, sent: 0, response: ["location": "/scenario/s/run/final"],
                faults: ["redirect=final"], arrived: 0, ended: 2),
            Self.entry(
                seq: 2, arrival: 2, route: "final", attempt: 1, sent: Self.length, response: ["etag": Self.etag(1)],
                arrived: 5, ended: 80),
        ]
        let trace = RunTrace(entry: entry, facts: Self.facts(entries, outputs: []))
        let hop = trace.requests[0]
        #expect(hop.isRedirect && hop.location == "/scenario/s/run/final" && hop.status == 307)
        #expect(hop.sent == nil && hop.version == nil)
        #expect(trace.requests[1].route == "final" && trace.requests[1].version == 1)
        #expect(!trace.requests[1].isRedirect)
        let svg = Timeline.svg(trace)
        #expect(svg.contains("↪ redirect 307"))
        #expect(svg.contains("→ /scenario/s/run/final"))
    }

    @Test func aTraceRoundTripsThroughJSON() throws {
        let (entry, facts) = try Self.spliced
        let trace = RunTrace(entry: entry, facts: facts)
        let encoded = try JSONEncoder().encode(trace)
        let decoded = try JSONDecoder().decode(RunTrace.self, from: encoded)
        #expect(decoded == trace)
        let document = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        let requests = try #require(document["requests"] as? [[String: Any]])
        let sent = try #require(requests.last?["sent"] as? [String: Any])
        #expect(sent["start"] as? Int == 1 << 20 && sent["end"] as? Int == 4 << 20)
        #expect(requests.first?["outcome"] as? String == "dropped")
    }

    @Test func rangeHeadersResolveAgainstTheLength() {
        func spans(_ header: String) -> [String] {
            RunTrace.ByteSpan.requested(by: header, length: 1000).map(\.description)
        }
        #expect(spans("bytes=100-") == ["100-999"])
        #expect(spans("bytes=0-99, 200-299") == ["0-99", "200-299"])
        #expect(spans("bytes=-300") == ["700-999"])
        #expect(spans("bytes=-5000") == ["0-999"])
        #expect(spans("bytes=900-5000") == ["900-999"])
        #expect(spans("bytes=1000-") == [])
        #expect(spans("bytes=9-3") == [])
        #expect(spans("items=0-1") == [])
        #expect(RunTrace.sentSpan(status: 206, contentRange: nil, bytesSent: 10) == nil)
        #expect(RunTrace.sentSpan(status: 200, contentRange: nil, bytesSent: 0) == nil)
    }
}
