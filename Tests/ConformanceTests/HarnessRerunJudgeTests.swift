import Conformance
import Foundation
import RangeServer
import Testing

/// Requests attributed to the start of the client that made them, and the bounds leaving a harness re-run's out;
/// the `--transient` syntax; the columns a run asks for; notes and interruptions in every report.
@Suite struct HarnessRerunJudgeTests {
    static let length: UInt64 = 1 << 20
    static let etag = "\"100000-1-v1\""
    static let second: Int64 = 1_800_000_000

    /// A GET arriving (and ending) `millisecond` after the fixed second.
    static func entry(
        _ seq: Int, status: Int = 200, sent: UInt64 = length, request: [String: String] = [:],
        response: [String: String] = ["etag": etag], millisecond: Int
    ) -> JournalEntry {
        JournalEntry(
            seq: seq,
            time: JournalEntry.timestamp(
                secondsSince1970: second + Int64(millisecond / 1000), milliseconds: millisecond % 1000),
            method: "GET", target: "/scenario/s/run", scenario: "s", run: "run", route: "", attempt: seq,
            requestHeaders: request, status: status, responseHeaders: response, bodyBytesPlanned: sent,
            bodyBytesSent: sent, outcome: .complete, connection: seq, peer: "127.0.0.1:1", arrival: seq)
    }

    static func at(_ millisecond: Int) -> Date {
        Date(timeIntervalSince1970: Double(second) + Double(millisecond) / 1000)
    }

    /// The first start asks for 0-65535 and exits 7; the harness's re-run (a second later) fetches the whole file
    /// again.
    static let entries = [
        entry(
            1, status: 206, sent: 65536, request: ["range": "bytes=0-65535"],
            response: ["etag": etag, "content-range": "bytes 0-65535/1048576"], millisecond: 10),
        entry(2, millisecond: 1150),
    ]

    static func facts(_ launches: [ClientLaunch], elapsed: Duration = .milliseconds(1400)) -> RunFacts {
        RunFacts(
            entries: entries,
            outputs: [
                OutputFacts(
                    name: "out.bin", exists: true, size: length,
                    segments: [ContentSegment(range: 0..<length, version: 1)])
            ], resourceLength: length, expectedVersion: 1, exit: .success, elapsed: elapsed, launches: launches)
    }

    static let bounded = ScenarioExpectation(
        outcome: .success, maxRefetched: 0, maxRequests: 1, maxElapsed: .milliseconds(500))

    @Test("a harness re-run's requests, refetched bytes and time are left out of every bound, and a note says so")
    func rerunIsNotCounted() {
        let facts = Self.facts([
            ClientLaunch(reason: .first, started: Self.at(0), ended: Self.at(100), exitStatus: 7),
            ClientLaunch(reason: .harnessRerun, started: Self.at(1100), ended: Self.at(1400), exitStatus: 0),
        ])
        #expect(facts.launchIndex(of: Self.entries[0]) == 0)
        #expect(facts.launchIndex(of: Self.entries[1]) == 1)
        #expect(facts.harnessRerunTime == .milliseconds(1300))
        let judgement = Judge.judgement(of: Self.bounded, in: facts)
        #expect(judgement.violations == [])
        #expect(judgement.result == .pass)
        #expect(
            judgement.notes == [
                "re-run 1 time by the harness (after exit 7): 1 request and 1.300s not counted against the bounds"
            ])
        #expect(Judge.verdict(of: Self.bounded, in: facts) == .pass)
    }

    @Test("the same requests made by a step's restart count: the scenario asked for that start")
    func stepRestartIsCounted() {
        let facts = Self.facts([
            ClientLaunch(reason: .first, started: Self.at(0), ended: Self.at(100), exitStatus: 137),
            ClientLaunch(reason: .stepRestart, started: Self.at(1100), ended: Self.at(1400), exitStatus: 0),
        ])
        let judgement = Judge.judgement(of: Self.bounded, in: facts)
        #expect(
            judgement.violations == [
                "2 requests, at most 1 allowed", "64K fetched twice, at most 0 allowed",
                "took 1.400s, expected at most 0.500s",
            ])
        #expect(judgement.notes == [])
        #expect(judgement.result == .fail("2 requests, at most 1 allowed (+2 more)"))
    }

    @Test("without launches (a client run in process) every request is the client's")
    func noLaunchesCountsEverything() {
        let judgement = Judge.judgement(of: Self.bounded, in: Self.facts([]))
        #expect(judgement.violations.first == "2 requests, at most 1 allowed")
        #expect(judgement.notes == [])
    }

    @Test("--transient NAME=CODES: a list of exit statuses 1-255, and one-line errors naming the culprit")
    func transientSyntax() throws {
        let declaration = try TransientExits(parsing: "my-tool=7,18, 28")
        #expect(declaration.client == "my-tool")
        #expect(declaration.codes == [7, 18, 28])
        #expect(TransientExits.describe(declaration.codes) == "7/18/28")
        for (bad, message) in [
            ("7,18", "--transient 7,18: expected NAME=CODES, e.g. mytool=7,18"),
            ("=7", "--transient =7: expected NAME=CODES, e.g. mytool=7,18"),
            ("t=", "--transient t: no exit status given (e.g. 7,18)"),
            ("t=7,,8", "--transient t: '' is not an exit status from 1 to 255"),
            ("t=0", "--transient t: '0' is not an exit status from 1 to 255"),
            ("t=256", "--transient t: '256' is not an exit status from 1 to 255"),
            ("t=x", "--transient t: 'x' is not an exit status from 1 to 255"),
        ] {
            #expect(throws: ConformanceError.invalidArgument(message), "\(bad)") {
                try TransientExits(parsing: bad)
            }
        }
    }

    @Test("a command client is re-run on its declared statuses only, and its invocation says which")
    func commandTransients() throws {
        let plain = try SubprocessClient.command("t=tool {url}")
        #expect(plain.transientExitCodes.isEmpty)
        #expect(plain.invocation == "tool {url}; never re-run")
        let declared = try SubprocessClient.command("t=tool {url}", transient: [18, 7])
        #expect(declared.transientExitCodes == [7, 18])
        #expect(declared.invocation == "tool {url}; re-run on exit 7/18")
    }

    @Test("every command column runs, once; --client picks known ones (all without it); an unknown name is refused")
    func columns() throws {
        let catalogue = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot)
        let careful = try SubprocessClient.command("careful=tool {url}")
        func names(_ selected: [String]) throws -> [String] {
            try catalogue.columns(named: selected, commands: [careful]).map(\.name)
        }
        #expect(
            try names([]) == [
                "engine", "engine-x4", "rangefetch", "rangefetch-x4", "curl", "wget", "wget2", "aria2c", "aria2c-x4",
                "axel", "axel-n4", "apt-helper", "curl-retry-all", "gdown", "go-getter", "grab", "httpie",
                "huggingface_hub", "lftp", "parfive", "pip", "pooch", "pypdl", "pysmartdl", "yt-dlp",
                "urlsession",
                "careful",
            ])
        #expect(try names(["rangefetch"]) == ["rangefetch", "careful"])
        #expect(try names(["careful", "curl", "careful"]) == ["careful", "curl"])
        #expect(try names(["careful"]) == ["careful"])
        #expect(
            throws: ConformanceError.invalidArgument(
                "unknown client 'nope' (known: \((catalogue.names + ["careful"]).joined(separator: ", ")))"
            )
        ) { try names(["nope"]) }
    }

    static let matrix = Matrix(
        scenarios: ["plain", "stall"], clients: ["engine", "careful"],
        cells: [
            MatrixCell(scenario: "plain", client: "engine", result: .pass, elapsed: .milliseconds(120)),
            MatrixCell(
                scenario: "plain", client: "careful", result: .pass, elapsed: .milliseconds(2100),
                notes: ["re-run 1 time by the harness (after exit 7): 1 request and 1.300s not counted"]),
        ], command: "rangecheck", interruption: "interrupted by SIGTERM after 2 of 4 pairs")

    @Test("every report lists the columns run, says the run was interrupted, and shows each cell's notes")
    func reportsCarryColumnsNotesAndInterruption() throws {
        let note = "re-run 1 time by the harness (after exit 7): 1 request and 1.300s not counted"
        let terminal = Report.terminal(Self.matrix)
        #expect(
            terminal.hasPrefix(
                """
                columns: engine, careful
                INTERRUPTED: interrupted by SIGTERM after 2 of 4 pairs; only the pairs that finished have a cell

                scenario (http)  engine  careful

                """), "\(terminal)")
        #expect(terminal.contains("note plain × careful: \(note)\n"))
        let markdown = Report.markdown(Self.matrix)
        #expect(markdown.hasPrefix("**INTERRUPTED: interrupted by SIGTERM after 2 of 4 pairs"))
        #expect(markdown.contains("Columns run: engine, careful\n"))
        #expect(markdown.contains("| plain | pass | pass<br>note: \(note) |"))
        let junit = Report.junit(Self.matrix)
        #expect(junit.contains("<!-- columns: engine, careful; interrupted by SIGTERM after 2 of 4 pairs -->"))
        #expect(junit.contains("<property name=\"interrupted\" value=\"interrupted by SIGTERM after 2 of 4 pairs\"/>"))
        #expect(junit.contains("<system-out>\(note)</system-out>"))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(Report.json(Self.matrix).utf8)) as? [String: Any])
        #expect(document["interruption"] as? String == "interrupted by SIGTERM after 2 of 4 pairs")
        #expect(document["clients"] as? [String] == ["engine", "careful"])
        let cells = try #require(document["cells"] as? [[String: Any]])
        #expect(cells.map { $0["notes"] as? [String] } == [[], [note]])
        let html = Report.html(Self.matrix)
        #expect(html.contains("<p class=\"columns\">columns: engine, careful</p>"))
        #expect(html.contains("<p class=\"interrupted\"><b>INTERRUPTED: interrupted by SIGTERM after 2 of 4 pairs"))
        #expect(html.contains("<small class=\"note\">\(note)</small>"))
        // A finished run says nothing of an interruption.
        var finished = Self.matrix
        finished.interruption = nil
        #expect(!Report.terminal(finished).contains("INTERRUPTED"))
        #expect(!Report.json(finished).contains("interruption"))
    }
}
