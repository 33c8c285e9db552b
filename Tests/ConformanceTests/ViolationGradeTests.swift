import Foundation
import RangeServer
import Testing

@testable import Conformance

/// One kind of violation the judge reports: a run that shows it and nothing else, how its reason starts, and the
/// grade the table in docs/conformance.md ("Grades") gives it.
struct GradedViolation: Sendable, CustomTestStringConvertible {
    let kind: String
    let expectation: ScenarioExpectation
    let facts: RunFacts
    let reason: String
    let grade: Grade
    /// The row an `unsafe` one corrupts the file in.
    var sibling: String? = nil

    var testDescription: String { "\(kind) is \(grade.rawValue)" }
}

/// Every kind of violation keeps its grade: a kind moved to another grade fails here, and the table in
/// docs/conformance.md must move with it. (The `output-names` kinds are pinned in ServerNamedOutputTests.)
@Suite struct ViolationGradeTests {
    typealias Fabricated = JudgeTests

    static let success = ScenarioExpectation(outcome: .success)
    static let notFound = ScenarioExpectation(outcome: .failure(kind: "http-404"))
    static let missing = [OutputFacts.missing("out.bin")]

    /// `resumed` (1 MiB dropped, then a Range from there with the ETag) with the resume changed.
    static func resumed(_ change: (inout JournalEntry) -> Void) -> [JournalEntry] {
        var entries = Fabricated.resumed
        change(&entries[1])
        return entries
    }

    /// `out.bin` of `size` bytes made of `segments`.
    static func output(size: UInt64, _ segments: [ContentSegment]) -> OutputFacts {
        OutputFacts(name: "out.bin", exists: true, size: size, segments: segments)
    }

    /// A correct second start after a first one on a full disk (`disk-full-at`) that ended with `exit`, leaving
    /// `left`.
    static func fullDisk(_ exit: ClientExit, left: OutputFacts) -> RunFacts {
        var facts = Fabricated.facts([Fabricated.entry(1)])
        facts.diskFull = RunFacts.DiskFull(size: 1 << 20, exit: exit, outputs: [left])
        return facts
    }

    static let corrupt: [GradedViolation] = [
        GradedViolation(
            kind: "spliced versions", expectation: success,
            facts: Fabricated.facts(
                [],
                outputs: [
                    output(
                        size: Fabricated.length,
                        [
                            ContentSegment(range: 0..<(1 << 20), version: 1),
                            ContentSegment(range: (1 << 20)..<Fabricated.length, version: 2),
                        ])
                ], version: 2), reason: "spliced versions: ", grade: .corrupt),
        GradedViolation(
            kind: "another version's content", expectation: success,
            facts: Fabricated.facts([], outputs: [Fabricated.good(1)], version: 2),
            reason: "content is version 1, expected version 2", grade: .corrupt),
        GradedViolation(
            kind: "bytes of no version", expectation: success,
            facts: Fabricated.facts(
                [],
                outputs: [
                    output(
                        size: Fabricated.length,
                        [
                            ContentSegment(range: 0..<4096, version: 1),
                            ContentSegment(range: 4096..<Fabricated.length, version: nil),
                        ])
                ]), reason: "bytes differ from version 1 at offset 4096", grade: .corrupt),
        GradedViolation(
            kind: "an output shorter than the representation", expectation: success,
            facts: Fabricated.facts(
                [], outputs: [output(size: 1 << 20, [ContentSegment(range: 0..<(1 << 20), version: 1)])]),
            reason: "out.bin is 1048576 bytes, expected 4194304", grade: .corrupt),
        GradedViolation(
            kind: "a SHA-256 other than the row's",
            expectation: ScenarioExpectation(sha256: String(repeating: "a", count: 64)),
            facts: Fabricated.facts(
                [],
                outputs: [
                    OutputFacts(
                        name: "out.bin", exists: true, size: Fabricated.length,
                        sha256: String(repeating: "b", count: 64))
                ]), reason: "SHA-256 bbbbbbbbbbbb…, expected aaaaaaaaaaaa…", grade: .corrupt),
        GradedViolation(
            kind: "success where a failure was expected", expectation: notFound,
            facts: Fabricated.facts([Fabricated.entry(1, status: 404, sent: 10)]),
            reason: "client reported success where failure http-404 was expected", grade: .corrupt),
        GradedViolation(
            kind: "intact: a failure leaving bytes that are not the representation",
            expectation: ScenarioExpectation(outcome: .intact),
            facts: Fabricated.facts(
                [Fabricated.entry(1)], outputs: [output(size: 1000, [ContentSegment(range: 0..<1000, version: nil)])],
                exit: .failure("exit 1")),
            reason: "failed, leaving bytes of out.bin that are not the representation at offset 0", grade: .corrupt),
        GradedViolation(
            kind: "disk-full-at: success with the output short", expectation: success,
            facts: fullDisk(.success, left: output(size: 1 << 20, [ContentSegment(range: 0..<(1 << 20), version: 1)])),
            reason: "reported success on a full disk (1M of room), leaving out.bin 1M of 4M", grade: .corrupt),
        GradedViolation(
            kind: "disk-full-at: bytes left that are not a prefix", expectation: success,
            facts: fullDisk(
                .failure("exit 3"),
                left: output(
                    size: 1 << 20,
                    [
                        ContentSegment(range: 0..<(512 << 10), version: nil),
                        ContentSegment(range: (512 << 10)..<(1 << 20), version: 1),
                    ])),
            reason: "on the full disk it left bytes of out.bin that are not the representation at offset 0",
            grade: .corrupt),
    ]

    static let fail: [GradedViolation] = [
        GradedViolation(
            kind: "a failure where success was expected", expectation: success,
            facts: Fabricated.facts([Fabricated.entry(1)], outputs: missing, exit: .failure("exit 22")),
            reason: "client reported failure (exit 22) where success was expected", grade: .fail),
        GradedViolation(
            kind: "a missing output", expectation: success,
            facts: Fabricated.facts([Fabricated.entry(1)], outputs: missing),
            reason: "output out.bin is missing", grade: .fail),
        GradedViolation(
            kind: "a SHA-256 not computed", expectation: ScenarioExpectation(sha256: String(repeating: "a", count: 64)),
            facts: Fabricated.facts([Fabricated.entry(1)]), reason: "SHA-256 of out.bin was not computed", grade: .fail),
        GradedViolation(
            kind: "intact: a cancel", expectation: ScenarioExpectation(outcome: .intact),
            facts: Fabricated.facts([Fabricated.entry(1)], exit: .cancelled),
            reason: "client reported cancelled where success or a clean failure was expected", grade: .fail),
        GradedViolation(
            kind: "not cancelled", expectation: ScenarioExpectation(outcome: .cancelled),
            facts: Fabricated.facts([Fabricated.entry(1)]), reason: "client reported success, not cancelled",
            grade: .fail),
        GradedViolation(
            kind: "a cancel where a failure was expected", expectation: notFound,
            facts: Fabricated.facts([Fabricated.entry(1, status: 404, sent: 10)], outputs: missing, exit: .cancelled),
            reason: "client reported cancelled where failure http-404 was expected", grade: .fail),
        GradedViolation(
            kind: "the wrong failure: another status", expectation: notFound,
            facts: Fabricated.facts(
                [Fabricated.entry(1, status: 500, sent: 10)], outputs: missing, exit: .failure("exit 22")),
            reason: "failed after a 500 response, expected 404", grade: .fail),
        GradedViolation(
            kind: "the wrong failure: no request", expectation: notFound,
            facts: Fabricated.facts([], outputs: missing, exit: .failure("exit 6")),
            reason: "failed without any request, expected a 404 response", grade: .fail),
        GradedViolation(
            kind: "the wrong failure: not after redirects",
            expectation: ScenarioExpectation(outcome: .failure(kind: "too-many-redirects")),
            facts: Fabricated.facts(
                [Fabricated.entry(1, status: 500, sent: 0)], outputs: missing, exit: .failure("exit 22")),
            reason: "failed, but not after redirects only (0 of 1 responses)", grade: .fail),
        GradedViolation(
            kind: "the wrong failure: no redirect to https",
            expectation: ScenarioExpectation(outcome: .failure(kind: "tls")),
            facts: Fabricated.facts([Fabricated.entry(1)], outputs: missing, exit: .failure("exit 35")),
            reason: "failed after a 200 response, expected a redirect to https last", grade: .fail),
        GradedViolation(
            kind: "an output left behind",
            expectation: ScenarioExpectation(
                outcome: .cancelled, steps: [.cancel(at: .percent(50))], leavesNoOutput: true),
            facts: Fabricated.facts(
                [], outputs: [output(size: 100, [ContentSegment(range: 0..<100, version: 1)])], exit: .cancelled),
            reason: "left out.bin behind (100)", grade: .fail),
        GradedViolation(
            kind: "a weak ETag in If-Range", expectation: success,
            facts: Fabricated.facts(resumed { $0.requestHeaders["if-range"] = "W/" + Fabricated.etag }),
            reason: "If-Range carries a weak ETag W/", grade: .fail),
        GradedViolation(
            kind: "disk-full-at: cancelled, not failure", expectation: success,
            facts: fullDisk(
                .cancelled, left: output(size: 1 << 20, [ContentSegment(range: 0..<(1 << 20), version: 1)])),
            reason: "reported cancelled on a full disk (1M of room), not failure", grade: .fail),
    ]

    static let unsafe: [GradedViolation] = [
        GradedViolation(
            kind: "a Range without If-Range", expectation: Fabricated.resume,
            facts: Fabricated.facts(resumed { $0.requestHeaders["if-range"] = nil }),
            reason: "Range request without If-Range",
            grade: .unsafe),
        GradedViolation(
            kind: "an If-Range naming another validator", expectation: Fabricated.resume,
            facts: Fabricated.facts(resumed { $0.requestHeaders["if-range"] = "\"other\"" }),
            reason: "If-Range \"other\", expected \(Fabricated.etag)", grade: .unsafe),
        GradedViolation(
            kind: "an If-Range naming a date where the ETag was expected", expectation: Fabricated.resume,
            facts: Fabricated.facts(resumed { $0.requestHeaders["if-range"] = "Thu, 26 Nov 2026 10:00:00 GMT" }),
            reason: "If-Range Thu, 26 Nov 2026 10:00:00 GMT, expected \(Fabricated.etag)", grade: .unsafe,
            sibling: "lm-collide"),
        GradedViolation(
            kind: "a Range where no safe validator exists",
            expectation: ScenarioExpectation(outcome: .success, range: .forbidden),
            facts: Fabricated.facts(Fabricated.resumed),
            reason: "resumed with Range bytes=1048576- although no safe validator exists", grade: .unsafe),
    ]

    static let costly: [GradedViolation] = [
        GradedViolation(
            kind: "over max-requests", expectation: ScenarioExpectation(outcome: .success, maxRequests: 1),
            facts: Fabricated.facts([Fabricated.entry(1), Fabricated.entry(2, millisecond: 100)]),
            reason: "2 requests, at most 1 allowed", grade: .costly),
        GradedViolation(
            kind: "over max-refetched", expectation: ScenarioExpectation(outcome: .success, maxRefetched: 256 << 10),
            facts: Fabricated.facts(
                resumed {
                    $0.requestHeaders["range"] = "bytes=524288-"
                    $0.responseHeaders["content-range"] = "bytes 524288-4194303/4194304"
                }),
            reason: "512K fetched twice, at most 256K allowed", grade: .costly),
        GradedViolation(
            kind: "under min-elapsed", expectation: ScenarioExpectation(outcome: .success, minElapsed: .seconds(2)),
            facts: Fabricated.facts([Fabricated.entry(1)]), reason: "finished in 1.000s, expected at least 2.000s",
            grade: .costly),
        GradedViolation(
            kind: "over max-elapsed",
            expectation: ScenarioExpectation(outcome: .success, maxElapsed: .milliseconds(500)),
            facts: Fabricated.facts([Fabricated.entry(1)]), reason: "took 1.000s, expected at most 0.500s",
            grade: .costly),
        GradedViolation(
            kind: "over max-connections", expectation: ScenarioExpectation(outcome: .success, maxConnections: 1),
            facts: Fabricated.facts([Fabricated.entry(1)], peak: 3),
            reason: "3 connections at once (sampled open; 1 with requests at once), at most 1 allowed",
            grade: .costly),
        GradedViolation(
            kind: "a retry sooner than Retry-After", expectation: success,
            facts: Fabricated.facts([
                Fabricated.entry(1, status: 503, sent: 20, response: ["retry-after": "2"]),
                Fabricated.entry(2, millisecond: 900),
            ]), reason: "retried after 900ms despite Retry-After: 2 (RFC 9110 §10.2.3", grade: .costly),
        GradedViolation(
            kind: "a restart from 0 instead of a resume",
            expectation: ScenarioExpectation(outcome: .success, range: .exact),
            facts: Fabricated.facts([
                Fabricated.entry(1, sent: 1 << 20, outcome: .dropped), Fabricated.entry(2, millisecond: 100),
            ]), reason: "restarted from 0 instead of resuming at 1048576", grade: .costly),
        GradedViolation(
            kind: "a segment's Range inside bytes received",
            expectation: ScenarioExpectation(outcome: .success, range: .exact), facts: insideReceived,
            reason: "Range starts at 524288, inside bytes already received (0-1048575)", grade: .costly),
    ]

    /// A segmented client that asks again for the second half of a first MiB it was sent whole.
    static var insideReceived: RunFacts {
        let entries = [(0, 1 << 20, 1), (512 << 10, 1 << 20, 2)].map { start, end, seq in
            Fabricated.entry(
                seq, status: 206, sent: UInt64(end - start),
                request: ["range": "bytes=\(start)-\(end - 1)", "if-range": Fabricated.etag],
                response: ["etag": Fabricated.etag, "content-range": "bytes \(start)-\(end - 1)/\(Fabricated.length)"],
                millisecond: seq * 100)
        }
        var facts = Fabricated.facts(entries)
        facts.segmented = true
        return facts
    }

    @Test(
        "every kind of violation has the grade docs/conformance.md gives it; an unsafe one names its sibling",
        arguments: corrupt + fail + unsafe + costly)
    func gradeOfEachKind(_ violation: GradedViolation) {
        let judgement = Judge.judgement(of: violation.expectation, in: violation.facts)
        let reasons = judgement.reasons
        #expect(reasons.count == 1, "\(reasons)")
        let found = reasons.first
        #expect(found?.reason.hasPrefix(violation.reason) == true, "\(reasons)")
        #expect(found?.grade == violation.grade)
        #expect(judgement.grade == violation.grade)
        #expect(found?.sibling == (violation.grade == .unsafe ? violation.sibling ?? "version-change" : nil))
    }
}
