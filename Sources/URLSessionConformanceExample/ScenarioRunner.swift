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
///   URLSession download is paused (there is no pausing a task in flight across FoundationNetworking and Apple's
///   systems alike).
/// - `cancel-at`: the transfer is stopped, and the output and its record removed.
/// - `prefill`: not performed. Bytes this client has no record of cannot be vouched for, so it would fetch the file
///   from zero, which judges nothing; the step stays out of `steps-done` and the server says n/a.
struct ScenarioRunner {
    let api: ConformanceAPI
    let label: String
    let scheme: String
    let attempts: Int
    let workDirectory: String

    /// Runs `scenario` and returns the server's verdict.
    func run(_ scenario: String) async throws -> Verdict {
        let run = try await api.startRun(RunRequest(scenario: scenario, client: label, scheme: scheme))
        let directory = workDirectory + "/" + scenario
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var outcome = "success"
        var stepsDone: [String] = []
        var outputs: [(route: String, path: String)] = []
        for (index, download) in run.urls.enumerated() {
            guard let url = URL(string: download.url) else { throw ConformanceAPI.Failure(description: "bad URL") }
            let output = directory + "/output-\(index)"
            outputs.append((download.route, output))
            // The catalogue's scenarios with steps have one file: the steps are the first file's.
            var steps = index == 0 ? run.steps.filter { $0.kind != "prefill" } : []
            // At most one run per step, and one after the last: every step is removed once done or missed.
            while true {
                let step = steps.first
                let threshold = step.map { Threshold($0.at) }
                let ending = await ResumableDownload(url: url, output: output).run(
                    attempts: attempts,
                    stopWhen: threshold.map { threshold in
                        { onDisk, length in threshold.isReached(onDisk: onDisk, length: length ?? download.size) }
                    })
                guard ending == .stopped, let step else {
                    if case .failed = ending { outcome = "failure" }
                    break
                }
                steps.removeFirst()
                stepsDone.append(step.kind)
                if step.kind == "pause-at" {
                    let seconds = Threshold.seconds(step.parameters["for"] ?? step.parameters["pause-for"] ?? "1s")
                    try await Task.sleep(for: .seconds(seconds))
                } else if step.kind == "cancel-at" {
                    ResumableDownload(url: url, output: output).discard()
                    outcome = "cancelled"
                    break
                }
            }
            if outcome != "success" { break }
        }
        let described = outputs.compactMap { OutputDescription.describe(route: $0.route, path: $0.path) }
        return try await api.finish(run.run, RunResult(outcome: outcome, outputs: described, stepsDone: stepsDone))
    }
}
