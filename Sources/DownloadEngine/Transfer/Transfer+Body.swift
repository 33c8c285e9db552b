import Crypto
import Foundation

extension Transfer {
    /// Streams the body into the partial file through a ``PartialFileWriter``, hashing as it goes, with a progress
    /// event every ``DownloadConfiguration/progressInterval``. Returns the partial file's new length.
    func stream(
        _ body: TransportBody, skip: Int64, expectedEnd: Int64?, owed: (@Sendable () throws -> Void)?
    ) async throws -> Int64 {
        let writer = PartialFileWriter(
            fd: fd, path: partialPath, length: length, hasher: hasher, unhashedPrefix: unhashedPrefix, skip: skip,
            end: expectedEnd,
            chunkLimit: max(1, min(configuration.writeBufferSize, 1 << 20)), activity: activity,
            owedSave: owed, owedSaveLimit: Self.unrecordedLimit)
        defer { if writer.madeOwedSave { recordOnDisk = true } }
        activity.advance(to: length)
        var failure: (any Error)?
        do {
            if body.isComplete() {
                // Already in memory: it drains at once, a progress ticker (a child task and a timer) would never
                // tick.
                try await body.drain(into: writer)
            } else {
                try await drainWithProgress(body, into: writer)
            }
        } catch {
            failure = error
        }
        // Whatever happened, the bytes the writer stored are the partial file's: keep them for the resume.
        length = writer.length
        unhashedPrefix = 0
        if let hashes = writer.hashes {
            do {
                hasher = try await hashes.result()
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        // A body that completes the download needs no progress event of its own: the engine publishes the final
        // one with the completion (one actor hop and one event less per file).
        if record.totalLength.map({ length < $0 }) ?? true { await progress(bytes: length, force: true) }
        if let expectedEnd, length < expectedEnd {
            throw DownloadError.prematureEndOfBody(received: length, expected: expectedEnd)
        }
        return length
    }

    /// Drains `body` into `writer` with a progress event every ``DownloadConfiguration/progressInterval``.
    func drainWithProgress(_ body: TransportBody, into writer: PartialFileWriter) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body.drain(into: writer) }
            group.addTask { [self] in
                while true {
                    try await Task.sleep(for: configuration.progressInterval)
                    await progress(bytes: activity.bytes, force: false)
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Reports the progress at `bytes`, at most every ``DownloadConfiguration/progressInterval`` unless `force`d.
    func progress(bytes: Int64, force: Bool) async {
        guard let reading = meter.reading(bytes: bytes, total: record.totalLength, force: force) else { return }
        await report(.progress(reading))
    }

    /// Runs `body` watched by the shared ``Watchdog``: it throws ``DownloadError/idleTimeout(_:)`` when no bytes
    /// arrived for the idle timeout, ``DownloadError/deadlineExceeded(_:)`` past the overall deadline.
    func withWatchdog<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let entry = Watchdog.Entry(
            activity: activity, idle: configuration.timeouts.idle, overall: configuration.timeouts.overall,
            started: started, lowSpeed: configuration.lowSpeed)
        watchedAttempt = entry
        return try await Watchdog.shared.run(entry, body)
    }
}
