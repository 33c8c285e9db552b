import Foundation
import HTTPVocabulary

extension Transfer {
    /// Whether a response lets the rest of the file be fetched in segments (see
    /// ``ResumePlanner/allowsSegments(_:total:held:minimumSegment:acceptRanges:)``), with more than one connection
    /// configured.
    func segmentable(_ response: TransportResponse, total: Int64?) -> Bool {
        guard configuration.connectionsPerFile > 1, !segmentsDisabled else { return false }
        return ResumePlanner.allowsSegments(
            .init(response), total: total, held: length, minimumSegment: configuration.minimumSegmentSize,
            acceptRanges: response.header("accept-ranges"))
    }

    /// Fetches what ``TaskRecord/segments`` leaves over several connections (see ``SegmentedDownload``), as one
    /// attempt of the request loop.
    ///
    /// A segment's 200 (the whole representation) is not written here: it is kept in ``restartBody`` for the
    /// loop's next attempt, which writes it from zero over one connection, as a single connection's restart would.
    ///
    /// - Parameter first: A response already streaming from the start of a range to fetch (connection 0's).
    func runSegments(first: SegmentedDownload.FirstBody?) async throws -> AttemptResult {
        guard let total = record.totalLength, let etag = record.etag, EntityTag.isStrong(etag) else {
            // Only a record damaged by hand gets here: the segments cannot be trusted without the validator.
            first?.body.abandon()
            record.segments = nil
            return .restart(.validatorChanged)
        }
        // The record (validators, ranges done) reaches the disk before the new segment log replaces the old one
        // and before any byte of this run is written.
        try save()
        // The segmented download hashes the file from byte 0 itself.
        unhashedPrefix = 0
        // Each segment's request is held to the low-speed limit on its own; the attempt that became them is not:
        // a slow segment must give its rest to another connection, not end them all.
        watchedAttempt?.stopWatchingSpeed()
        if try FileIO.size(fd, partialPath) != total { try FileIO.truncate(fd, partialPath, to: total) }
        preallocated = true
        let log = try SegmentLog(path: store.segmentLogPath(record))
        let plan = SegmentPlan(
            total: total, completed: record.segments ?? [], minimumSize: configuration.minimumSegmentSize)
        let download = SegmentedDownload(
            plan: plan,
            context: .init(
                transport: transport, configuration: configuration, policy: policy,
                // Every connection starts from the original URL, each following the redirects itself, and counts
                // as cross-origin wherever this transfer's own redirects already left the origin.
                route: Route(original: record.url, crossOrigin: route.crossOrigin),
                validators: record.validators, ifRange: etag, fd: fd, path: partialPath, log: log,
                connections: configuration.connectionsPerFile, started: started, pacing: pacing,
                countSlowAbort: { [self] in try countSlowAbort() },
                progress: { [self] bytes in
                    activity.advance(to: bytes)
                    await progress(bytes: bytes, force: false)
                }))
        let outcome: SegmentedDownload.Outcome
        do {
            outcome = try await download.run(first: first, hashing: configuration.verification.computesSHA256)
        } catch {
            let done = download.board.snapshot
            record.segments = done.completed
            length = done.doneBytes
            if let retry = error as? SegmentedDownload.Retry {
                return .failed(retry.error, retryAfter: retry.after)
            }
            throw error
        }
        switch outcome {
        case .complete(let digest):
            hasher = digest
            length = total
            record.segments = [0..<total]
            return .done
        case .restart(let reason, let response):
            segmentsDisabled = reason == .rangeIgnored
            FileIO.unlink(log.path)
            record.segments = nil
            length = download.board.snapshot.doneBytes
            configuration.logger.info(
                "segments discarded; restarting from zero",
                metadata: ["url": "\(record.url)", "reason": "\(reason.rawValue)"])
            guard let response else { return .restart(reason) }
            reprDigest = nil
            record.reprDigestSHA256 = nil
            restartBody = response
            return .again
        }
    }
}
