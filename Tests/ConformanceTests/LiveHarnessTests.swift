import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// A deliberately broken client: downloads with URLSession, then corrupts or truncates what it wrote.
private struct BrokenClient: ClientAdapter {
    enum Fault: Sendable { case flipByte, truncate, none }
    let fault: Fault
    var name: String { "broken" }
    let capabilities: ClientCapabilities = [.multipleFiles]
    let invocation = "URLSession, then a deliberate fault"

    func unavailableReason() async -> String? { nil }

    func start(_ job: ClientJob) async throws -> any ClientRun {
        let inner = try await URLSessionClient().start(job)
        return BrokenRun(inner: inner, job: job, fault: fault)
    }
}

private struct BrokenRun: ClientRun {
    let inner: any ClientRun
    let job: ClientJob
    let fault: BrokenClient.Fault

    func poll() async -> ClientExit? {
        guard let exit = await inner.poll() else { return nil }
        let path = job.transfers[0].output
        if var data = FileManager.default.contents(atPath: path) {
            switch fault {
            case .flipByte: data[1000] ^= 0xFF
            case .truncate: data = data.prefix(1000)
            case .none: break
            }
            try? data.write(to: URL(fileURLWithPath: path))
        }
        return exit
    }

    func terminate() async { await inner.terminate() }
}

/// The runner end to end, with a real server and in-test clients.
@Suite(.serialized) struct LiveHarnessTests {
    static func run(_ scenario: String, _ client: any ClientAdapter) async throws -> CellResult {
        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
        configuration.scenariosDirectory = "fixtures/scenarios"
        let entry = try #require(
            try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files").first {
                $0.name == scenario
            })
        return try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(entry, client: client, server: server, options: .forTests).result
        }
    }

    @Test func aCorrectClientPasses() async throws {
        #expect(try await Self.run("plain", BrokenClient(fault: .none)) == .pass)
    }

    @Test func corruptedBytesFail() async throws {
        #expect(
            try await Self.run("plain", BrokenClient(fault: .flipByte))
                == .fail("bytes differ from version 1 at offset 0"))
    }

    @Test func aTruncatedFileFails() async throws {
        #expect(
            try await Self.run("plain", BrokenClient(fault: .truncate))
                == .fail(
                    "out.bin is 1000 bytes, expected 1048576".replacingOccurrences(of: "out.bin", with: "plain.bin")))
    }

    @Test func aClientWithoutResumeFailsAResumeScenario() async throws {
        let result = try await Self.run("drop-then-resume", URLSessionClient())
        #expect(result == .fail("restarted from 0 instead of resuming at 2457600 (+1 more)"))
    }

    @Test func aMissingProgramIsSkippedAndAnImpossibleStepIsNotApplicable() async throws {
        let missing = try SubprocessClient.command("nothere=/nonexistent/tool {url}")
        #expect(await missing.unavailableReason() != nil)
        #expect(
            try await Self.run("pause-resume", URLSessionClient())
                == .notApplicable("urlsession cannot pause and resume"))
    }
}
