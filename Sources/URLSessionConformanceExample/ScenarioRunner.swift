import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs one scenario of a `rangecheck serve`: asks for a run, downloads its URLs with ``ResumableDownload``,
/// performs the run's steps on the way, and reports what it left on disk.
///
/// The steps, as an app would meet them:
/// - `kill-at`: the transfer is torn down once that many bytes are on disk and a new ``ResumableDownload`` starts
///   with nothing but what is on disk, as an app killed and launched again would.
/// - `pause-at` + `for`: the transfer is stopped there and a new one started after the pause, which is how a
///   URLSession download is paused (a task in flight cannot be held on FoundationNetworking and Apple's systems
///   alike).
/// - `cancel-at`: the transfer is stopped, and the output and its record removed.
/// - `prefill`: not performed. Bytes this client has no record of cannot be vouched for, so it would fetch the file
///   from zero, which judges nothing; the step stays out of `steps-done` and the server says n/a.
/// - `disk-full-at`: not performed. It needs the outputs on a filesystem with that little room (a tmpfs mounted as
///   root), which an app cannot arrange for itself; the step stays out of `steps-done` and the server says n/a. So
///   does any step of a kind this client does not know.
struct ScenarioRunner {
    let api: ConformanceAPI
    let label: String
    let scheme: String
    let attempts: Int
    let workDirectory: String
    /// Whether the outputs stay on disk after the verdict (else the scenario's directory is removed).
    let keepOutputs: Bool

    /// Runs `scenario` and returns the server's verdict.
    func run(_ scenario: String) async throws -> Verdict {
        let run = try await api.startRun(RunRequest(scenario: scenario, client: label, scheme: scheme))
        let directory = workDirectory + "/" + scenario
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let outputs = run.urls.indices.map { directory + "/output-\($0)" }
        var pending = run.steps.filter(\.isPerformed)
        var stepsDone: [String] = []
        var outcome = "success"
        var detail: String?
        // One file after another; a step not reached in one file's download waits for the next one's.
        files: for (download, output) in zip(run.urls, outputs) {
            guard let url = URL(string: download.url) else { throw ConformanceAPI.Failure(description: "bad URL") }
            // Each pass is one run of the downloader; every pass but the last performs a step and removes it.
            while true {
                let step = pending.first
                // The bytes of the other files are already complete on disk: a step counts all of them.
                let before = outputs.filter { $0 != output }.reduce(Int64(0)) { $0 + Self.size($1) }
                let stopWhen: (@Sendable (Int64) -> Bool)? = step.map { step in
                    let threshold = step.bytes - before
                    return { onDisk in onDisk >= threshold }
                }
                let ending = await ResumableDownload(url: url, output: output).run(
                    attempts: attempts, stopWhen: stopWhen)
                if case .failed(let why) = ending {
                    (outcome, detail) = ("failure", why)
                    break files
                }
                guard ending == .stopped, let step else { break }
                pending.removeFirst()
                if let name = step.name { stepsDone.append(name) }
                if step.pauseAt != nil {
                    try await Task.sleep(for: .seconds(step.pauseSeconds))
                } else if step.cancelAt != nil {
                    ResumableDownload(url: url, output: output).discard()
                    outcome = "cancelled"
                    break files
                }
            }
        }
        let described = zip(run.urls, outputs).map { OutputDescription.describe(route: $0.route, path: $1) }
        if !keepOutputs { try? FileManager.default.removeItem(atPath: directory) }
        return try await api.finish(
            run.run, RunResult(outcome: outcome, outputs: described, stepsDone: stepsDone, detail: detail))
    }

    private static func size(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
    }
}
