import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// Downloaders that probe first, or resume from a rounded offset, are judged on their downloads: the probe is counted
/// apart and does not use up the row's faulted attempt, and resuming from what was written is a cost.
@Suite(.serialized, .enabled(if: BuiltProducts.onPath("python3") != nil, "needs python3"))
struct ProbingClientTests {
    @Test(
        "a downloader that probes first passes plain and the drop and kill rows, its probes counted apart",
        arguments: ["plain", "drop-then-resume", "kill-at-25"])
    func probingDownloaderPasses(_ scenario: String) async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run(scenario, try downloader.client("careful"))
        #expect(cell.result == .pass, "\(cell.result.label): \(cell.result.reason)")
        #expect(cell.notes.contains { $0.contains("probe") }, "notes: \(cell.notes)")
        // The probe gave its attempt back: the download itself met the row's drop and resumed after it.
        if scenario == "drop-then-resume", let trace = cell.trace {
            #expect(trace.requests.contains { $0.outcome == .dropped }, "the download never met the drop")
        }
    }

    @Test("a downloader resuming from a rounded offset passes drop-then-resume, the cost shown")
    func roundedResumePasses() async throws {
        let downloader = try TestDownloader()
        defer { downloader.remove() }
        let cell = try await HarnessClientTests.run("drop-then-resume", try downloader.client("rounded"))
        #expect(cell.result == .pass, "\(cell.result.label): \(cell.result.reason)")
        // Once for the row's drop; a slow machine can add one (under AddressSanitizer the downloader's own 5 s read
        // timeout once cut its resumed response too: "2 times", as truly).
        #expect(
            cell.notes.contains { $0.hasPrefix("resumed before the bytes received ") }, "notes: \(cell.notes)")
    }
}
