import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// Rows whose client names its output from the server (`output-names`): the expectation, the clients' command lines,
/// the judge's rules over the output directory, and the `name-change-on-resume` row end to end with downloaders that
/// keep the first name or follow each new one.
@Suite("Outputs named by the server")
struct ServerNamedOutputTests {
    static let names = ["report-1.bin", "report-2.bin"]
    static let length: UInt64 = 2 << 20

    /// An output of `size` bytes of version 1, or with unknown bytes from `badAt`.
    static func file(_ name: String, size: UInt64, badAt: UInt64? = nil) -> OutputFacts {
        var segments = [ContentSegment(range: 0..<min(size, badAt ?? size), version: 1)]
        if let badAt, badAt < size { segments.append(ContentSegment(range: badAt..<size, version: nil)) }
        return OutputFacts(name: name, exists: true, size: size, segments: segments.filter { !$0.range.isEmpty })
    }

    /// The judgement of a successful run whose directory held `files`.
    static func judge(_ files: [OutputFacts], exit: ClientExit = .success) throws -> Judge.Judgement {
        let expectation = try ExpectationTests.parse(
            #"{"outcome": "success", "version": 1, "output-names": ["report-1.bin", "report-2.bin"]}"#)
        let named = ServerNamedOutput.resolve(files, names: names) {
            $0.size == length && $0.segments.allSatisfy { $0.version == 1 }
        }
        var facts = RunFacts(
            entries: [], outputs: [named.output], resourceLength: length, expectedVersion: 1, exit: exit,
            elapsed: .seconds(1))
        facts.serverNamed = named
        return Judge.judgement(of: expectation, in: facts)
    }

    @Test("output-names needs plain file names and one file; it asks for the server-named capability")
    func expectation() throws {
        let expectation = try ExpectationTests.parse(#"{"outcome": "success", "output-names": ["a.bin", "b b"]}"#)
        #expect(expectation.outputNames == ["a.bin", "b b"])
        #expect(expectation.requiredCapabilities == [.serverNamedOutput])
        for (json, culprit) in [
            (#"{"outcome": "success", "output-names": []}"#, "must be a non-empty array of file names"),
            (#"{"outcome": "success", "output-names": "a"}"#, "must be a non-empty array of file names"),
            (#"{"outcome": "success", "output-names": ["../a"]}"#, #""../a" is not a plain file name"#),
            (#"{"outcome": "success", "output-names": [".."]}"#, #"".." is not a plain file name"#),
            (
                #"{"outcome": "success", "files": ["a", "b"], "output-names": ["a"]}"#,
                "cannot be combined with several files"
            ),
        ] {
            do {
                _ = try ExpectationTests.parse(json)
                Issue.record("accepted \(json)")
            } catch let error as ConformanceError {
                #expect(error.message.contains("expect.output-names: \(culprit)"), "\(error.message)")
                #expect(!error.message.contains("\n"))
            }
        }
    }

    @Test("curl, wget, wget2 and aria2c are given the directory, not a name; curl without -C -")
    func commandLines() throws {
        var job = ClientJob(
            transfers: [ClientJob.Transfer(url: "http://127.0.0.1:1/x", output: "/tmp/out/x.bin")],
            stateDirectory: "/tmp/state", logDirectory: "/tmp/logs")
        job.namesFromServer = true
        #expect(job.workingDirectory == "/tmp/out")
        let curl = try SubprocessClient.curl.arguments(job)
        #expect(
            curl.suffix(5) == [
                "--remote-name", "--remote-header-name", "--output-dir", "/tmp/out", job.transfers[0].url,
            ])
        #expect(!curl.contains("--continue-at") && !curl.contains("--output"))
        for client in [SubprocessClient.wget, .wget2] {
            let arguments = try client.arguments(job)
            #expect(
                arguments.suffix(4) == [
                    "--content-disposition", "--directory-prefix", "/tmp/out", job.transfers[0].url,
                ])
            #expect(arguments.contains("--continue") && !arguments.contains("--output-document"))
        }
        let aria2c = try SubprocessClient.aria2c.arguments(job)
        #expect(aria2c.suffix(3) == ["--dir", "/tmp/out", job.transfers[0].url] && !aria2c.contains("--out"))
        // The reproducer runs the same command from the output directory.
        #expect(SubprocessClient.wget2.command(for: job)?.line.hasPrefix("cd /tmp/out && wget2 ") == true)
        job.namesFromServer = false
        #expect(SubprocessClient.wget2.command(for: job)?.line.hasPrefix("wget2 ") == true)
        #expect(try SubprocessClient.curl.arguments(job).contains("--continue-at"))
        // Who can: the clients with a Content-Disposition option, and a template that leaves the name out.
        #expect(SubprocessClient.axel.capabilities.contains(.serverNamedOutput) == false)
        #expect(try SubprocessClient.command("t=tool -d {output-dir} {url}").capabilities.contains(.serverNamedOutput))
        #expect(
            try SubprocessClient.command("t=tool -d {output-dir} -o {output} {url}").capabilities.contains(
                .serverNamedOutput) == false)
    }

    @Test("one complete file under either name passes; a partial copy beside it fails; foreign bytes are corrupt")
    func judge() throws {
        #expect(try Self.judge([Self.file("report-1.bin", size: Self.length)]).reasons.isEmpty)
        #expect(try Self.judge([Self.file("report-2.bin", size: Self.length)]).reasons.isEmpty)

        let partial = try Self.judge([
            Self.file("report-1.bin", size: 768 << 10), Self.file("report-2.bin", size: Self.length),
        ])
        #expect(partial.violations == ["left a partial report-1.bin (768K of 2M) beside report-2.bin"])
        #expect(partial.grade == .fail)

        let foreign = try Self.judge([
            Self.file("report-1.bin", size: Self.length), Self.file("report-2.bin", size: 1 << 20, badAt: 512 << 10),
        ])
        #expect(foreign.grade == .corrupt)
        #expect(
            foreign.violations == [
                "left report-2.bin beside report-1.bin with bytes that are not the representation at offset 524288"
            ])

        // Saved under the URL's name: nothing where the server said.
        let elsewhere = try Self.judge([Self.file("token", size: Self.length)])
        #expect(elsewhere.grade == .fail)
        #expect(
            elsewhere.violations.first
                == "saved nothing under a name the server gave (report-1.bin or report-2.bin); its directory holds "
                + "token (2M)")

        // A control file left beside a complete output is a note, not a verdict.
        let control = try Self.judge([
            Self.file("report-1.bin", size: Self.length), Self.file("report-1.bin.aria2", size: 300),
        ])
        #expect(control.reasons.isEmpty)
        #expect(control.notes == ["also left report-1.bin.aria2 (300) in the output directory"])
    }

    @Test(
        "name-change-on-resume: keeping the first name passes; following the new one fails, leaving a partial file",
        .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
    func endToEnd() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let keep = try await HarnessClientTests.run("name-change-on-resume", downloader.client("named-keep"))
        #expect(keep.result == .pass, "\(keep.result)")

        let follow = try await HarnessClientTests.run("name-change-on-resume", downloader.client("named-follow"))
        #expect(follow.result == .fail("left a partial report-1.bin (768K of 2M) beside report-2.bin"))
        #expect(follow.reasons.map(\.grade) == [.fail])
        let reproducer = try #require(follow.reproducer)
        #expect(reproducer.client.contains("cd "), "\(reproducer.client)")
        #expect(reproducer.compare.outputs.map { ($0 as NSString).lastPathComponent } == Self.names)

        // A template given a name cannot take the row.
        let named = try await HarnessClientTests.run("name-change-on-resume", downloader.client("careful"))
        #expect(named.result == .notApplicable("careful cannot name its output from Content-Disposition"))
    }
}

/// The service hands `output-names` out and judges the files a tester reports by name.
@Suite("Outputs named by the server: the service")
struct ServerNamedOutputServiceTests {
    @Test("a run hands out output-names; files reported by name are judged as rangecheck judges them; no name is a 409")
    func service() async throws {
        try await withService { _, _, client in
            let whole = generated(length: 2 << 20, seed: 86, version: 1)
            func report(_ outputs: [[String: Any]]) async throws -> ServiceClient.Answer {
                let created = try await client.createRun("name-change-on-resume", client: "tester")
                #expect(created["output-names"] as? [String] == ServerNamedOutputTests.names)
                let result = try #require(created["result"] as? String)
                return try await client.send("POST", result, json: ["outcome": "success", "outputs": outputs])
            }
            func named(_ name: String, _ data: Data) -> [String: Any] {
                ServiceClient.output(route: "", data).merging(["name": name]) { _, new in new }
            }
            let unnamed = try await report([ServiceClient.output(route: "", whole)])
            // Names are a rule of the run's row, not of the document's schema: the report does not fit its run.
            #expect(unnamed.status == 409)
            #expect(unnamed.text.contains("output-names"), "\(unnamed.text)")
            let climbing = try await report([named("../report-1.bin", whole)])
            #expect(climbing.status == 400, "\(climbing.text)")

            let kept = try await report([named("report-1.bin", whole)])
            #expect(kept.status == 200, "\(kept.text)")
            #expect(kept.object["result"] as? String == "pass", "\(kept.text)")

            let partial = try await report([
                named("report-1.bin", whole.prefix(768 << 10)), named("report-2.bin", whole),
            ])
            #expect(partial.object["result"] as? String == "fail", "\(partial.text)")
            #expect(partial.object["grade"] as? String == "fail", "\(partial.text)")
            #expect(
                (partial.object["reason"] as? String)?.hasPrefix(
                    "left a partial report-1.bin (768K of 2M) beside report-2.bin") == true, "\(partial.text)")
        }
    }
}
