import Foundation

/// Polls `condition` every `interval` until it holds or `limit` (stretched by `testTimeScale`) has passed, and
/// checks it once more after the last sleep (on a loaded machine the task may wake long after the deadline, and the
/// condition may well hold by then).
///
/// For a wait whose outcome the test then checks with its own expectation; the limit is a deadline, generous because
/// the wait ends as soon as the condition holds.
///
/// - Returns: whether the condition held.
public func waitUntil(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + scaled(limit)
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
