import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `disk-full-at` step as `rangecheck serve` hands it out and judges it: the tester fills its own disk, and reports
/// how the run on the full disk ended as `disk-full-outcome`; the service sees the requests of both runs.
@Suite("Conformance service: disk-full-at")
struct ServiceDiskFullTests {
    /// The room the `disk-full` row gives, and the length of its file.
    static let room = 2 << 20
    static let length = 4 << 20

    @Test("disk-full hands out disk-full-at with its room; a failure on the full disk, then a resume, passes")
    func failureThenResumePasses() async throws {
        try await withService { _, _, client in
            let (run, data, verdict) = try await Self.judgeResumed(client, label: "full-disk-tester", first: "failure")
            let steps = try #require(run["steps"] as? [[String: Any]])
            #expect(steps.count == 1)
            #expect(steps.first?["disk-full-at"] as? String == "2M")
            #expect(steps.first?["bytes"] as? Int == Self.room)
            #expect(data == generated(length: Self.length, seed: 66, version: 1))
            #expect(verdict.object["result"] as? String == "pass", "\(verdict.text)")
            let notes = verdict.object["notes"] as? [String] ?? []
            #expect(
                notes.contains(
                    "on a full disk (2M of room) it reported failure (reported by the client); given room, it ran again"
                ),
                "\(notes)")
        }
    }

    @Test("success reported on the full disk is corrupt: the room cannot hold the file")
    func successIsCorrupt() async throws {
        try await withService { _, _, client in
            let verdict = try await Self.judgeResumed(client, label: "says-success", first: "success").verdict
            #expect(verdict.object["result"] as? String == "fail", "\(verdict.text)")
            #expect(verdict.object["grade"] as? String == "corrupt", "\(verdict.text)")
            #expect(
                verdict.object["reason"] as? String
                    == "reported success on a full disk (2M of room), which cannot hold the 4M it fetches",
                "\(verdict.text)")
        }
    }

    @Test("without disk-full-outcome, or without the step in steps-done, the verdict is n/a, never a pass")
    func unreportedIsNotApplicable() async throws {
        try await withService { _, _, client in
            let cases: [(done: [String], outcome: String?, reason: String)] = [
                (
                    ["disk-full-at"], nil,
                    "the client did not report disk-full-outcome, how its run on the full disk ended"
                ),
                ([], "failure", "the client did not perform the disk-full-at 2M step"),
            ]
            for (done, outcome, reason) in cases {
                let run = try await client.createRun("disk-full", client: "partial-tester")
                // Not downloaded at all: what an n/a verdict rests on is the report alone.
                var report: [String: Any] = [
                    "outcome": "failure", "outputs": [["route": "", "exists": false]], "steps-done": done,
                ]
                if let outcome { report["disk-full-outcome"] = outcome }
                let verdict = try await client.send("POST", try #require(run["result"] as? String), json: report)
                #expect(verdict.object["result"] as? String == "n/a", "\(verdict.text)")
                #expect(verdict.object["reason"] as? String == reason, "\(verdict.text)")
            }
        }
    }

    /// Runs `disk-full` as a tester whose client fails on the full disk and then resumes
    /// (``ServiceClient/fetchAroundAFullDisk(_:room:)``), and reports the whole file with `first` as the
    /// `disk-full-outcome`.
    ///
    /// - Returns: the run as handed out, the bytes fetched, and the verdict's answer.
    private static func judgeResumed(
        _ client: ServiceClient, label: String, first: String
    ) async throws -> (run: [String: Any], data: Data, verdict: ServiceClient.Answer) {
        let run = try await client.createRun("disk-full", client: label)
        let url = try #require((run["urls"] as? [[String: Any]])?.first?["url"] as? String)
        let data = try await client.fetchAroundAFullDisk(url, room: room)
        let verdict = try await client.send(
            "POST", try #require(run["result"] as? String),
            json: [
                "outcome": "success", "outputs": [ServiceClient.output(route: "", data)],
                "steps-done": ["disk-full-at"], "disk-full-outcome": first,
            ])
        return (run, data, verdict)
    }
}

extension ServiceClient {
    /// What a conforming client does on `disk-full`: its first run gets the first `room` bytes (asked for as a range
    /// from 0, which keeps nothing another version could splice with) and fails on the full disk; given room, it asks
    /// for the rest with `Range` and `If-Range`.
    ///
    /// - Returns: the bytes of both runs, in order.
    func fetchAroundAFullDisk(_ url: String, room: Int) async throws -> Data {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.setValue("bytes=0-\(room - 1)", forHTTPHeaderField: "Range")
        let (head, first) = try await Self.session.data(for: request)
        let etag = try #require((first as? HTTPURLResponse)?.value(forHTTPHeaderField: "ETag"))
        request.setValue("bytes=\(room)-", forHTTPHeaderField: "Range")
        request.setValue(etag, forHTTPHeaderField: "If-Range")
        let (rest, _) = try await Self.session.data(for: request)
        return head + rest
    }
}
