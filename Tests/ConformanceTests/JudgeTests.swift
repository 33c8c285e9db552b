import Foundation
import RangeServer
import Testing

@testable import Conformance

/// The judge must catch every kind of misbehaviour, each from fabricated facts of a deliberately broken client.
@Suite struct JudgeTests {
    static let length: UInt64 = 4 << 20
    static let etag = "\"b400000-1-v1\""

    /// A journal entry at `millisecond` past a fixed second.
    static func entry(
        _ seq: Int, status: Int = 200, sent: UInt64 = length, outcome: JournalOutcome = .complete,
        request: [String: String] = [:], response: [String: String] = ["etag": etag], connection: Int? = nil,
        arrival: Int? = nil, millisecond: Int = 0
    ) -> JournalEntry {
        JournalEntry(
            seq: seq,
            time: JournalEntry.timestamp(
                secondsSince1970: 1_800_000_000 + Int64(millisecond / 1000), milliseconds: millisecond % 1000),
            method: "GET", target: "/scenario/s/run", scenario: "s", run: "run", route: "", attempt: seq,
            requestHeaders: request, status: status, responseHeaders: response, bodyBytesPlanned: sent,
            bodyBytesSent: sent, outcome: outcome, connection: connection ?? seq, peer: "127.0.0.1:1",
            arrival: arrival ?? seq)
    }

    static func good(_ version: Int = 1) -> OutputFacts {
        OutputFacts(
            name: "out.bin", exists: true, size: length, segments: [ContentSegment(range: 0..<length, version: version)]
        )
    }

    /// A correct drop-and-resume conversation: 1M then a Range from 1M with the ETag.
    static var resumed: [JournalEntry] {
        [
            entry(1, sent: 1 << 20, outcome: .dropped),
            entry(
                2, status: 206, sent: 3 << 20, request: ["range": "bytes=1048576-", "if-range": etag],
                response: ["etag": etag, "content-range": "bytes 1048576-4194303/4194304"], millisecond: 100),
        ]
    }

    static func facts(
        _ entries: [JournalEntry], outputs: [OutputFacts] = [good()], exit: ClientExit = .success,
        elapsed: Duration = .seconds(1), version: Int = 1, peak: Int? = nil
    ) -> RunFacts {
        RunFacts(
            entries: entries, outputs: outputs, resourceLength: length, expectedVersion: version, exit: exit,
            elapsed: elapsed, observedPeakConnections: peak)
    }

    static let resume = ScenarioExpectation(outcome: .success, maxRefetched: 0, range: .exact, ifRange: .etag)

    @Test func aCorrectResumePasses() {
        #expect(Judge.violations(of: Self.resume, in: Self.facts(Self.resumed)) == [])
    }

    @Test func wrongBytesAreCaught() {
        let output = OutputFacts(
            name: "out.bin", exists: true, size: Self.length,
            segments: [
                ContentSegment(range: 0..<4096, version: 1), ContentSegment(range: 4096..<Self.length, version: nil),
            ])
        let verdict = Judge.verdict(of: Self.resume, in: Self.facts(Self.resumed, outputs: [output]))
        #expect(verdict == .fail("bytes differ from version 1 at offset 4096"))
    }

    @Test func aWrongDigestIsCaught() {
        var expectation = ScenarioExpectation(outcome: .success)
        expectation.sha256 = String(repeating: "a", count: 64)
        var output = Self.good()
        output.sha256 = String(repeating: "b", count: 64)
        let reasons = Judge.violations(of: expectation, in: Self.facts([Self.entry(1)], outputs: [output]))
        #expect(reasons.first?.hasPrefix("SHA-256 bbbbbbbbbbbb…, expected aaaaaaaaaaaa…") == true)
    }

    @Test func splicedVersionsAreCaught() {
        let output = OutputFacts(
            name: "out.bin", exists: true, size: Self.length,
            segments: [
                ContentSegment(range: 0..<(1 << 20), version: 1),
                ContentSegment(range: (1 << 20)..<Self.length, version: 2),
            ])
        let reasons = Judge.violations(
            of: ScenarioExpectation(outcome: .success), in: Self.facts([], outputs: [output], version: 2))
        #expect(reasons == ["spliced versions: 0-1048575 v1, 1048576-4194303 v2"])
        let judgement = Judge.judgement(
            of: ScenarioExpectation(outcome: .success), in: Self.facts([], outputs: [output], version: 2))
        #expect(judgement.grade == .corrupt)
    }

    @Test func aMissingIfRangeIsCaught() {
        var entries = Self.resumed
        entries[1].requestHeaders["if-range"] = nil
        #expect(
            Judge.violations(of: Self.resume, in: Self.facts(entries)) == [
                "Range request without If-Range (expected \(Self.etag))"
            ])
        // The file is right this time: unsafe, naming the row where the same resume splices two versions.
        let judgement = Judge.judgement(of: Self.resume, in: Self.facts(entries))
        #expect(
            judgement.reasons == [
                Violation(
                    "Range request without If-Range (expected \(Self.etag))", grade: .unsafe, sibling: "version-change")
            ])
        #expect(judgement.result.reason.hasSuffix("; corrupts the file in version-change"))
    }

    @Test func aWeakIfRangeIsCaughtEvenWithoutAnIfRangeRule() {
        var entries = Self.resumed
        entries[1].requestHeaders["if-range"] = "W/" + Self.etag
        let reasons = Judge.violations(of: ScenarioExpectation(outcome: .success), in: Self.facts(entries))
        #expect(reasons == ["If-Range carries a weak ETag W/\(Self.etag)"])
        // A broken MUST (RFC 9110 §13.1.5).
        #expect(Judge.judgement(of: ScenarioExpectation(outcome: .success), in: Self.facts(entries)).grade == .fail)
    }

    @Test func aRangePastTheBytesReceivedIsNotedNotGraded() {
        var late = Self.resumed
        late[1].requestHeaders["range"] = "bytes=2000000-"
        // No rule broken by itself (a hole shows in the output): a note, not a violation.
        #expect(Judge.violations(of: Self.resume, in: Self.facts(late)) == [])
        #expect(
            Judge.judgement(of: Self.resume, in: Self.facts(late)).notes.contains(
                "Range starts at 2000000, past the 1048576 bytes received: no rule broken by itself (a hole would "
                    + "show in the output)"))
    }

    /// httpie and yt-dlp resume from what they had written, a little before what they had received: under `exact`
    /// that is a cost shown in the cell, never a failure, and `max-refetched` leaves it out.
    @Test func aResumeFromWhatWasWrittenIsACostNotAFailure() {
        var early = Self.resumed
        early[1].requestHeaders["range"] = "bytes=1024000-"
        early[1].responseHeaders["content-range"] = "bytes 1024000-4194303/4194304"
        early[1].bodyBytesSent = Self.length - 1_024_000
        let judgement = Judge.judgement(of: Self.resume, in: Self.facts(early))
        #expect(judgement.violations == [])
        #expect(
            judgement.notes.contains { $0.hasPrefix("resumed before the bytes received 1 time") && $0.contains("24K") })
    }

    /// A response the client left of its own accord and then fetched again from 0.
    static func left(_ sent: UInt64) -> [JournalEntry] {
        var first = entry(1, sent: sent, outcome: .clientClosed)
        first.abandoned = true
        return [first, entry(2, millisecond: 100)]
    }

    /// yt-dlp reads the start of a response and closes it, then downloads: the probe is counted apart.
    @Test func aProbeIsNotCountedAgainstTheBounds() {
        let plain = ScenarioExpectation(outcome: .success, maxRefetched: 0, maxRequests: 1)
        let judgement = Judge.judgement(of: plain, in: Self.facts(Self.left(96 << 10)))
        #expect(judgement.violations == [])
        #expect(judgement.notes.contains { $0.hasPrefix("1 probe ") })
        // Under a resume rule, starting again after a probe is no restart either.
        #expect(Judge.violations(of: Self.resume, in: Self.facts(Self.left(96 << 10))) == [])
    }

    /// A client that drops a download it has gone far into and starts again chose to: a cost, not "restarted from 0
    /// instead of resuming"; what it fetched again still counts.
    @Test func startingAgainAfterLeavingIsACost() {
        let reasons = Judge.violations(of: Self.resume, in: Self.facts(Self.left(2 << 20)))
        #expect(reasons == ["2M fetched twice, at most 0 allowed"])
    }

    /// A response ended by the harness's kill is no choice of the client's: starting again from 0 after it is still
    /// a restart instead of a resume.
    @Test func aKilledResponseIsNotLeftByTheClient() {
        var entries = Self.left(2 << 20)
        entries[1].arrivalTime = JournalEntry.timestamp(secondsSince1970: 1_800_000_000, milliseconds: 100)
        entries[0].arrivalTime = JournalEntry.timestamp(secondsSince1970: 1_800_000_000, milliseconds: 0)
        var facts = Self.facts(entries)
        let second = 1_800_000_000.0
        facts.launches = [
            ClientLaunch(
                reason: .first, started: Date(timeIntervalSince1970: second - 1),
                ended: Date(timeIntervalSince1970: second + 0.01), stopped: Date(timeIntervalSince1970: second)),
            ClientLaunch(reason: .stepRestart, started: Date(timeIntervalSince1970: second + 0.05)),
        ]
        let reasons = Judge.violations(of: Self.resume, in: facts)
        #expect(reasons.first == "restarted from 0 instead of resuming at 2097152")
    }

    /// The service judges clients whose tester performs the steps: with no launches, a response left past the probe
    /// limit in a row with a kill is the kill's, and starting again from 0 after it is still a restart.
    @Test func withoutLaunchesAKillRowsLeftResponseIsTheKills() {
        var killRow = Self.resume
        killRow.steps = [.killAndRestart(at: .percent(25))]
        #expect(
            Judge.violations(of: killRow, in: Self.facts(Self.left(2 << 20))).first
                == "restarted from 0 instead of resuming at 2097152")
        // A probe is still a probe.
        #expect(Judge.violations(of: killRow, in: Self.facts(Self.left(96 << 10))) == [])
    }

    /// A drop the client met is the server's doing: starting again from 0 is a restart instead of a resume.
    @Test func aDropFollowedByARestartIsCaught() {
        let entries = [Self.entry(1, sent: 1 << 20, outcome: .dropped), Self.entry(2, millisecond: 100)]
        #expect(
            Judge.violations(of: Self.resume, in: Self.facts(entries)).first
                == "restarted from 0 instead of resuming at 1048576")
        // So is a Range from byte 0.
        var ranged = entries
        ranged[1].status = 206
        ranged[1].requestHeaders = ["range": "bytes=0-", "if-range": Self.etag]
        ranged[1].responseHeaders["content-range"] = "bytes 0-4194303/4194304"
        #expect(
            Judge.violations(of: Self.resume, in: Self.facts(ranged)).first
                == "restarted from 0 instead of resuming at 1048576")
    }

    /// Four segments of 1 MiB, the second dropped at 512K and resumed: correct for a segmented client, whose
    /// segment starts are past the bytes received so far; asking again for received bytes is still caught.
    @Test func aSegmentedClientIsJudgedBySegmentsNotByOneStream() {
        let mebibyte: UInt64 = 1 << 20
        func segment(
            _ seq: Int, from start: UInt64, to end: UInt64, sent: UInt64, outcome: JournalOutcome = .complete
        )
            -> JournalEntry
        {
            Self.entry(
                seq, status: 206, sent: sent, outcome: outcome,
                request: ["range": "bytes=\(start)-\(end - 1)", "if-range": Self.etag],
                response: ["etag": Self.etag, "content-range": "bytes \(start)-\(end - 1)/\(Self.length)"],
                millisecond: seq * 100)
        }
        var entries = (0..<4).map { index in
            segment(index + 1, from: UInt64(index) * mebibyte, to: UInt64(index + 1) * mebibyte, sent: mebibyte)
        }
        entries[1] = segment(2, from: mebibyte, to: 2 * mebibyte, sent: mebibyte / 2, outcome: .dropped)
        entries.append(segment(5, from: mebibyte + mebibyte / 2, to: 2 * mebibyte, sent: mebibyte / 2))
        var facts = Self.facts(entries)
        facts.segmented = true
        #expect(Judge.violations(of: Self.resume, in: facts) == [])
        // The same journal from a single-stream client: its third request skipped the dropped one's rest.
        #expect(
            Judge.judgement(of: Self.resume, in: Self.facts(entries)).notes.first?.hasPrefix(
                "Range starts at 2097152, past the 1572864 bytes received") == true)
        // The request bound is written for one stream: five requests are a split, not a storm.
        var bounded = Self.resume
        bounded.maxRequests = 1
        #expect(Judge.violations(of: bounded, in: facts) == [])
        #expect(Judge.violations(of: bounded, in: Self.facts(entries)).contains("5 requests, at most 1 allowed"))
        // A segmented client that asks again for bytes it has.
        facts.entries[4] = segment(5, from: mebibyte, to: 2 * mebibyte, sent: mebibyte)
        #expect(
            Judge.violations(of: Self.resume, in: facts).first
                == "Range starts at 1048576, inside bytes already received (0-1572863)")
    }

    /// Seen with rangefetch -x 4 on `ignore-if-range-version-change` over https: one segment's request was answered
    /// 200 with version 2 (the server ignored its If-Range); while that response still streamed, another connection
    /// asked for a range with If-Range naming version 2. The client had the new ETag from the header: no stale guess.
    @Test func aSegmentedIfRangeMayNameAValidatorFromAResponseStillStreaming() {
        let newer = "\"b400000-1-v2\""
        func timed(
            _ seq: Int, request: [String: String], status: Int, etag: String, arrived: Int, ended: Int
        ) -> JournalEntry {
            var entry = Self.entry(
                seq, status: status, sent: 1 << 20, request: request, response: ["etag": etag], millisecond: ended)
            entry.arrivalTime = JournalEntry.timestamp(secondsSince1970: 1_800_000_000, milliseconds: arrived)
            return entry
        }
        let entries = [
            timed(1, request: ["range": "bytes=0-1048575"], status: 206, etag: Self.etag, arrived: 0, ended: 50),
            timed(
                2, request: ["range": "bytes=1048576-2097151", "if-range": Self.etag], status: 200, etag: newer,
                arrived: 100, ended: 900),
            timed(
                3, request: ["range": "bytes=2097152-3145727", "if-range": newer], status: 206, etag: newer,
                arrived: 300, ended: 400),
        ]
        var facts = Self.facts(entries)
        facts.segmented = true
        #expect(!Judge.violations(of: Self.resume, in: facts).contains { $0.hasPrefix("If-Range") })
        // An If-Range naming an ETag no response had carried before it is still a stale or made-up validator.
        var invented = entries
        invented[2].requestHeaders["if-range"] = "\"b400000-1-v3\""
        facts.entries = invented
        #expect(Judge.violations(of: Self.resume, in: facts).contains { $0.hasPrefix("If-Range \"b400000-1-v3\"") })
    }

    /// A segmented client's first response asks for the first segment only, and while it streams the others
    /// start: bytes a response sent past a range delegated to another connection while it ran were on the way,
    /// not kept, and a response that had not ended when a request arrived (less than 50 ms before) is not yet
    /// known to the client.
    @Test func aSegmentedClientIsJudgedByWhatItCouldKnow() {
        let mebibyte: UInt64 = 1 << 20
        func timed(
            _ seq: Int, range: String?, ifRange: String?, status: Int = 206, contentRange: String?, sent: UInt64,
            outcome: JournalOutcome = .complete, arrived: Int, ended: Int
        ) -> JournalEntry {
            var request: [String: String] = [:]
            request["range"] = range
            request["if-range"] = ifRange
            var response = ["etag": Self.etag]
            response["content-range"] = contentRange
            var entry = Self.entry(
                seq, status: status, sent: sent, outcome: outcome, request: request, response: response,
                millisecond: ended)
            entry.arrivalTime = JournalEntry.timestamp(
                secondsSince1970: 1_800_000_000 + Int64(arrived / 1000), milliseconds: arrived % 1000)
            return entry
        }
        // A first response from byte 0, cut by the client at 1 MiB once the second segment had started (the
        // server counted 3 MiB sent); the second segment, then a resume of the second from where it was cut.
        let entries = [
            timed(
                1, range: nil, ifRange: nil, status: 200, contentRange: nil, sent: 3 * mebibyte,
                outcome: .clientClosed, arrived: 0, ended: 40),
            timed(
                2, range: "bytes=1048576-4194303", ifRange: Self.etag,
                contentRange: "bytes 1048576-4194303/\(Self.length)", sent: 3 * mebibyte, arrived: 10, ended: 90),
        ]
        var facts = Self.facts(entries)
        facts.segmented = true
        #expect(Judge.violations(of: Self.resume, in: facts) == [])
        // One stream judged the same way sends the second request inside what it was sent.
        #expect(!Judge.violations(of: Self.resume, in: Self.facts(entries)).isEmpty)
        // A request arriving 30 ms after another's response ended may not have known it; 200 ms after, it did.
        var late = entries
        late.append(
            timed(
                3, range: "bytes=1048576-2097151", ifRange: Self.etag,
                contentRange: "bytes 1048576-2097151/\(Self.length)", sent: mebibyte, arrived: 120, ended: 130))
        facts.entries = late
        #expect(Judge.violations(of: Self.resume, in: facts) == [])
        late[2] = timed(
            3, range: "bytes=1048576-2097151", ifRange: Self.etag,
            contentRange: "bytes 1048576-2097151/\(Self.length)", sent: mebibyte, arrived: 300, ended: 310)
        facts.entries = late
        #expect(
            Judge.violations(of: Self.resume, in: facts).first?.hasPrefix("Range starts at 1048576, inside") == true)
        // Refetch bounds are per request open at once.
        #expect(JournalAnalysis.peakOpenRequests(entries) == 2)
        // A first segment (Range from 0, no If-Range) is not a resume, even where resuming is forbidden.
        let probe = [
            timed(
                1, range: "bytes=0-1048575", ifRange: nil, contentRange: "bytes 0-1048575/\(Self.length)",
                sent: mebibyte, arrived: 0, ended: 10)
        ]
        var forbidden = Self.resume
        forbidden.range = .forbidden
        var probeFacts = Self.facts(probe)
        probeFacts.segmented = true
        #expect(Judge.violations(of: forbidden, in: probeFacts) == [])
        #expect(Judge.violations(of: Self.resume, in: probeFacts) == [])
    }

    /// Seen with a pooled client: the dropped response went out on a new connection 2 and was journalled
    /// late, while the resume reused the older idle connection 1. Only the arrival order is right.
    @Test func requestsAreJudgedInArrivalOrderNotJournalOrConnectionOrder() {
        let dropped = Self.entry(2, sent: 1 << 20, outcome: .dropped, connection: 2, arrival: 1)
        var resume = Self.resumed[1]
        resume.seq = 1
        resume.connection = 1
        resume.arrival = 2
        #expect(Judge.violations(of: Self.resume, in: Self.facts([resume, dropped])) == [])
        // Arrival order reversed: now the resume really came first, and the judge must say so.
        resume.arrival = 0
        #expect(
            Judge.judgement(of: Self.resume, in: Self.facts([resume, dropped])).notes.first?.hasPrefix(
                "Range starts at 1048576, past the 0 bytes received") == true)
    }

    @Test func aRestartInsteadOfAResumeIsCaught() {
        let entries = [Self.entry(1, sent: 1 << 20, outcome: .dropped), Self.entry(2, millisecond: 100)]
        #expect(
            Judge.violations(of: Self.resume, in: Self.facts(entries)).first
                == "restarted from 0 instead of resuming at 1048576")
    }

    @Test func tooManyRefetchedBytesAreCaught() {
        var entries = Self.resumed
        entries[1].requestHeaders["range"] = "bytes=524288-"
        entries[1].responseHeaders["content-range"] = "bytes 524288-4194303/4194304"
        let reasons = Judge.violations(
            of: ScenarioExpectation(outcome: .success, maxRefetched: 256 << 10), in: Self.facts(entries))
        #expect(reasons == ["512K fetched twice, at most 256K allowed"])
    }

    @Test func retryingBeforeRetryAfterIsCaught() {
        let entries = [
            Self.entry(1, status: 503, sent: 20, response: ["retry-after": "2"]),
            Self.entry(2, millisecond: 900),
        ]
        let expectation = ScenarioExpectation(outcome: .success, minElapsed: .seconds(2))
        let reasons = Judge.violations(of: expectation, in: Self.facts(entries, elapsed: .milliseconds(950)))
        #expect(
            reasons == [
                "retried after 900ms despite Retry-After: 2 (RFC 9110 §10.2.3; retrying sooner is how clients get "
                    + "banned and retry storms start)",
                "finished in 0.950s, expected at least 2.000s",
            ])
        // Impolite, not wrong: both are costs.
        let judgement = Judge.judgement(of: expectation, in: Self.facts(entries, elapsed: .milliseconds(950)))
        #expect(judgement.reasons.map(\.grade) == [.costly, .costly] && judgement.grade == .costly)
        let patient = [entries[0], Self.entry(2, millisecond: 2300)]
        #expect(Judge.violations(of: expectation, in: Self.facts(patient, elapsed: .milliseconds(2400))) == [])
    }

    @Test func retryingBeforeARetryAfterDateIsCaught() {
        // Entry 1 ends at second 1_800_000_000 exactly; its Retry-After is a date 2 s later.
        let date = FaultPlan.RetryAfter.date(secondsAhead: 2).headerValue(now: 1_800_000_000)
        let entries = [
            Self.entry(1, status: 503, sent: 20, response: ["retry-after": date]),
            Self.entry(2, millisecond: 900),
        ]
        let expectation = ScenarioExpectation(outcome: .success)
        #expect(
            Judge.violations(of: expectation, in: Self.facts(entries)) == [
                "retried after 900ms despite Retry-After: \(date) (a wait of 2000ms) (RFC 9110 §10.2.3; retrying "
                    + "sooner is how clients get banned and retry storms start)"
            ])
        let patient = [entries[0], Self.entry(2, millisecond: 2000)]
        #expect(Judge.violations(of: expectation, in: Self.facts(patient)) == [])
        // Measured from the response's Date when the entry has one: a Date 1 s earlier asks for 3 s.
        var dated = patient
        dated[0].responseHeaders["date"] = FaultPlan.RetryAfter.date(secondsAhead: -1).headerValue(now: 1_800_000_000)
        #expect(Judge.violations(of: expectation, in: Self.facts(dated)).count == 1)
        // A date already past asks for no wait.
        var past = entries
        past[0].responseHeaders["retry-after"] = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(Judge.violations(of: expectation, in: Self.facts(past)) == [])
    }

    @Test func tooManyConnectionsAreCaughtFromTheJournalAndFromSampling() {
        // Connection 1 is open from 0 to 1000ms (two responses), 2 and 3 end inside that span.
        let entries = [
            Self.entry(1, connection: 1), Self.entry(2, connection: 2, millisecond: 300),
            Self.entry(3, connection: 3, millisecond: 400), Self.entry(4, connection: 1, millisecond: 1000),
            Self.entry(5, connection: 4, millisecond: 1500),
        ]
        let expectation = ScenarioExpectation(outcome: .success, maxConnections: 1)
        #expect(
            Judge.violations(of: expectation, in: Self.facts(entries)) == ["2 connections at once, at most 1 allowed"])
        #expect(
            Judge.violations(of: expectation, in: Self.facts(entries, peak: 3)) == [
                "3 connections at once (sampled open; 2 with requests at once), at most 1 allowed"
            ])
    }

    @Test func intactAcceptsADecodedFileOrACleanFailureAndCatchesEncodedBytes() {
        let intact = ScenarioExpectation(outcome: .intact)
        let one = [Self.entry(1)]
        #expect(Judge.violations(of: intact, in: Self.facts(one)) == [])
        let missing = OutputFacts(name: "out.bin", exists: false, size: 0, segments: [])
        #expect(Judge.violations(of: intact, in: Self.facts(one, outputs: [missing], exit: .failure("encoded"))) == [])
        let encoded = OutputFacts(
            name: "out.bin", exists: true, size: 1000, segments: [ContentSegment(range: 0..<1000, version: nil)])
        #expect(Judge.violations(of: intact, in: Self.facts(one, outputs: [encoded])).count >= 1)
        let failedLeavingEncoded = Judge.violations(
            of: intact, in: Self.facts(one, outputs: [encoded], exit: .failure("encoded")))
        #expect(failedLeavingEncoded.first?.contains("not the representation") == true)
    }

    @Test func successWhereFailureIsExpectedIsCaught() {
        let expectation = ScenarioExpectation(outcome: .failure(kind: "http-404"), maxRequests: 1)
        let reasons = Judge.violations(of: expectation, in: Self.facts([Self.entry(1, status: 404, sent: 10)]))
        #expect(reasons == ["client reported success where failure http-404 was expected"])
        let failed = Self.facts(
            [Self.entry(1, status: 404, sent: 10)], outputs: [.missing("out.bin")], exit: .failure("exit 22"))
        #expect(Judge.violations(of: expectation, in: failed) == [])
        let retried = Self.facts(
            [Self.entry(1, status: 404, sent: 10), Self.entry(2, status: 404, sent: 10)], exit: .failure("exit 22"))
        #expect(Judge.violations(of: expectation, in: retried) == ["2 requests, at most 1 allowed"])
    }

    @Test func tooManyRedirectsIsJudgedFromTheJournal() {
        let expectation = ScenarioExpectation(outcome: .failure(kind: "too-many-redirects"))
        let loop = (1...6).map { Self.entry($0, status: 302, sent: 0) }
        #expect(Judge.violations(of: expectation, in: Self.facts(loop, exit: .failure("exit 47"))) == [])
        // Stopping at the first URL it is sent back to is detecting the loop (apt-helper's 3 responses).
        let detected = (1...3).map { Self.entry($0, status: 302, sent: 0) }
        #expect(Judge.violations(of: expectation, in: Self.facts(detected, exit: .failure("exit 100"))) == [])
        let gaveUpAtOnce = (1...2).map { Self.entry($0, status: 302, sent: 0) }
        #expect(
            Judge.violations(of: expectation, in: Self.facts(gaveUpAtOnce, exit: .failure("exit 1")))
                == ["failed, but not after redirects only (2 of 2 responses)"])
        let other = Self.facts([Self.entry(1, status: 500, sent: 0)], exit: .failure("exit 22"))
        #expect(
            Judge.violations(of: expectation, in: other) == ["failed, but not after redirects only (0 of 1 responses)"])
    }

    @Test func aResumeIsForbiddenWithoutASafeValidator() {
        let expectation = ScenarioExpectation(outcome: .success, range: .forbidden)
        #expect(
            Judge.violations(of: expectation, in: Self.facts(Self.resumed)).first?.hasPrefix("resumed with Range")
                == true)
    }

    @Test func aCancelMustLeaveNothingBehind() {
        let expectation = ScenarioExpectation(
            outcome: .cancelled, steps: [.cancel(at: .percent(50))], leavesNoOutput: true)
        var partial = Self.good()
        partial.size = 100
        let reasons = Judge.violations(of: expectation, in: Self.facts([], outputs: [partial], exit: .cancelled))
        #expect(reasons == ["left out.bin behind (100)"])
    }
}
