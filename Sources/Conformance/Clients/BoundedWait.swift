import NIOConcurrencyHelpers

/// Waits for `body` at most `limit`; returns whether it finished.
///
/// For the harness's own waits on a client that may be stuck for good (an in-process engine whose threads
/// deadlocked cannot be shut down): `body` runs in a task of its own, left behind if it never finishes, so the
/// matrix goes on to its next cell instead of hanging with the client.
///
/// - Parameters:
///   - limit: The longest wait.
///   - body: The work waited for.
/// - Returns: `true` when `body` finished within `limit`.
func finishes(within limit: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    let done = NIOLockedValueBox(false)
    let work = Task {
        await body()
        done.withLockedValue { $0 = true }
    }
    let deadline = ContinuousClock.now + limit
    while !done.withLockedValue({ $0 }) {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    _ = await work.value
    return true
}
