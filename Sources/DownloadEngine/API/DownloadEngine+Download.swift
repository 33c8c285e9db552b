extension DownloadEngine {
    /// Downloads `request` and returns how it ended, within the calling Swift task's lifetime: when that task is
    /// cancelled, the download is paused or removed (per ``DownloadConfiguration/onTaskCancellation``) before the
    /// call throws `CancellationError`.
    ///
    /// ```swift
    /// let work = Task { try await engine.download(DownloadRequest(url: url, destination: "a.bin")) }
    /// work.cancel()  // the transfer stops; with .pause its partial file and record stay for the next call
    /// ```
    ///
    /// A download that completed or failed before the cancellation was seen returns its result as usual. One paused
    /// by someone else (``pause(_:)``, ``shutdown()``) returns ``DownloadResult/paused``.
    ///
    /// - Parameter request: What to download and where; the same URL and destination as an unfinished task resumes
    ///   it (see ``add(_:start:)``).
    /// - Returns: The task's result.
    /// - Throws: What ``add(_:start:)`` throws; `CancellationError` when the calling task was cancelled (then
    ///   nothing is added if it was cancelled before the call).
    public func download(_ request: DownloadRequest) async throws -> DownloadResult {
        try Task.checkCancellation()
        let id = try add(request)
        let result = await withTaskCancellationHandler {
            await self.result(of: id)
        } onCancel: {
            // Not isolated to the engine: the stop runs as a task of its own, and the awaited result then arrives.
            Task { await self.stopForTaskCancellation(id) }
        }
        if Task.isCancelled, result == .paused || result == .cancelled {
            // Again, and awaited: the handler's task may not have finished removing the record yet, and the caller
            // must find the files as the policy says once this throws.
            await stopForTaskCancellation(id)
            throw CancellationError()
        }
        return result
    }

    /// Pauses or removes a task whose awaiting Swift task was cancelled; nothing for a task that has ended.
    private func stopForTaskCancellation(_ id: DownloadTaskID) async {
        guard let state = snapshot(id)?.state, state != .completed, state != .failed else { return }
        if configuration.onTaskCancellation.removes {
            try? await remove(id)
        } else {
            try? await pause(id)
        }
    }
}
