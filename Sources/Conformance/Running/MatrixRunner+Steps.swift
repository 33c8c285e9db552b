import Foundation

/// What a scenario's steps do to a running client, when they fire, how they read in reports, and whether a row that
/// changes the client's world can run here.
extension MatrixRunner {
    static func perform(_ step: ScenarioExpectation.Step, on run: any ClientRun) async throws {
        switch step {
        case .killAndRestart: try await run.killAndRestart()
        case .pause(_, let duration):
            try await run.pause()
            try await Task.sleep(for: duration)
            try await run.resume()
        case .cancel: try await run.cancel()
        case .prefill, .diskFull: break
        }
    }

    static func threshold(of step: ScenarioExpectation.Step) -> ScenarioExpectation.Threshold {
        switch step {
        case .killAndRestart(let at), .pause(let at, _), .cancel(let at), .prefill(let at): at
        case .diskFull(let size): .bytes(size)
        }
    }

    static func describe(_ step: ScenarioExpectation.Step) -> String {
        let at = threshold(of: step).text
        switch step {
        case .killAndRestart: return "kill-at \(at)"
        case .pause: return "pause-at \(at)"
        case .cancel: return "cancel-at \(at)"
        case .prefill: return "prefill \(at)"
        case .diskFull: return "disk-full-at \(at)"
        }
    }

    /// Why a row that changes the client's world (`disk-full-at`, `entry: dead-ipv6`) cannot run here; nil when it
    /// can, or when it changes nothing.
    static func worldProblem(_ entry: CatalogueEntry) -> String? {
        let needs =
            entry.expectation.diskFullSize != nil
            ? "disk-full-at needs a tmpfs the harness mounts"
            : entry.expectation.entry == .deadIPv6 ? "dead-ipv6 needs a hosts file of the harness's own" : nil
        guard let needs, let reason = ClientWorld.unavailableReason else { return nil }
        return "\(needs): \(reason)"
    }

    static func describe(_ capabilities: ClientCapabilities) -> String {
        var words: [String] = []
        if capabilities.contains(.killAndRestart) { words.append("be killed and restarted") }
        if capabilities.contains(.pauseAndResume) { words.append("pause and resume") }
        if capabilities.contains(.cancel) { words.append("cancel") }
        if capabilities.contains(.prefilledOutput) { words.append("continue a prefilled output file") }
        if capabilities.contains(.multipleFiles) { words.append("download several files at once") }
        if capabilities.contains(.authorization) { words.append("be configured with an Authorization header") }
        if capabilities.contains(.serverNamedOutput) { words.append("name its output from Content-Disposition") }
        return words.joined(separator: " or ")
    }
}
