import Crypto
import Foundation
import HTTPVocabulary
import Logging
import NIOCore
import Synchronization

/// What a transfer tells the engine while it runs.
enum TransferReport: Sendable {
    case running
    case progress(DownloadProgress)
    case redirected(RedirectHop, TaskRecord)
    /// A task named from the response chose its file's name (the record's `destination`).
    case named(TaskRecord)
    case retrying(attempt: Int, delay: Duration, error: DownloadError)
}

/// How a transfer ended.
enum TransferOutcome: Sendable {
    /// `onDisk`: whether the completed record was saved (a small body that arrived whole has none); `notModified`:
    /// a revalidation got a 304 and the destination was kept.
    case completed(TaskRecord, sha256: String?, bytes: Int64, onDisk: Bool, notModified: Bool = false)
    case failed(TaskRecord, DownloadError)
    /// Stopped by cancellation (pause, cancel, shutdown); the record was persisted, except by a revalidation that
    /// had no new representation yet (`revalidating`: the next start revalidates again).
    case stopped(TaskRecord, revalidating: Bool = false)
}

/// The thin I/O shell around ``RequestPolicy`` and ``ResumePlanner``: one task's request loop, partial file and
/// digest.
///
/// The loop asks the policy what each request carries and what its response means, and hands each failure to its
/// ``Retries``; it only sends, streams, saves and waits. A download fetched in segments runs as one attempt of this
/// loop (``runSegments(first:)``), whose connections follow the same policy.
///
/// A `Transfer` is used by one task at a time: the body-streaming child runs while its parent awaits it, which is
/// why the class is `@unchecked Sendable`. Its parts: the request loop here, one single-stream attempt
/// (`Transfer+Attempt.swift`), the segments (`Transfer+Segments.swift`), the body (`Transfer+Body.swift`) and the
/// partial file (`Transfer+PartialFile.swift`).
final class Transfer: @unchecked Sendable {
    var record: TaskRecord
    let store: StateStore
    let transport: any Transport
    let configuration: DownloadConfiguration
    /// The rules of every request of this task (headers, redirects, retries).
    var policy: RequestPolicy
    /// Where the next request goes.
    var route: Route
    /// The bandwidth limits every request of this task is read under (the engine's and its own), if any.
    let pacing: ReadPacing?
    let report: @Sendable (TransferReport) async -> Void

    /// Whether a record of this task is on disk (loaded, or saved by the engine or a transfer before).
    var recordOnDisk: Bool
    /// Set while a completed task asks whether its file changed (``Revalidation``), until a new representation's
    /// head arrives: meanwhile nothing is saved, so the completed record on disk stays the truth.
    var revalidating: Bool
    var fd: Int32 = -1
    let partialPath: String
    var length: Int64 = 0
    /// `nil` when the configuration computes no digest.
    var hasher: SHA256?
    /// The bytes at the start of the partial file, kept from an earlier run, that `hasher` does not cover yet: the
    /// next body's hash pipeline reads them back first, while the request is on its way.
    var unhashedPrefix: Int64 = 0
    var reprDigest: String?
    let activity = ActivityClock()
    let started = ContinuousClock.now
    var meter: ProgressMeter

    /// Whether the partial file was extended to the full length for segments (so it must be emptied even when no
    /// byte of it is done).
    var preallocated = false
    /// Set when a segment's Range got a 200: the rest of this run uses one connection.
    var segmentsDisabled = false
    /// A 200 a segment got to its Range: the whole representation, which the next attempt writes from zero.
    var restartBody: TransportResponse?

    /// Slow attempts aborted in this run (see ``DownloadConfiguration/LowSpeedLimit``), single-stream and segments
    /// alike: atomic, as the segments count from their own tasks (and no lock is allocated per file).
    let slowAborts = Atomic<Int>(0)
    /// The watchdog entry of the latest attempt, whose low-speed watch stops when the attempt turns into segments.
    var watchedAttempt: Watchdog.Entry?

    init(
        record: TaskRecord, recordOnDisk: Bool, revalidating: Bool = false, store: StateStore,
        transport: any Transport, configuration: DownloadConfiguration, pacing: ReadPacing? = nil,
        report: @escaping @Sendable (TransferReport) async -> Void
    ) {
        self.pacing = pacing
        self.record = record
        self.recordOnDisk = recordOnDisk
        self.revalidating = revalidating
        self.store = store
        self.transport = transport
        self.configuration = configuration
        self.policy = RequestPolicy(configuration, requestHeaders: record.requestHeaders)
        self.route = Route(original: record.url, at: record.resolvedURL)
        self.report = report
        self.partialPath = store.partialPath(record)
        self.reprDigest = record.reprDigestSHA256
        self.hasher = configuration.verification.computesSHA256 ? SHA256() : nil
        self.meter = ProgressMeter(interval: configuration.progressInterval)
    }

    deinit { if fd >= 0 { FileIO.close(fd) } }

    /// Runs until the file is in place, the task fails, or the surrounding task is cancelled.
    func run() async -> TransferOutcome {
        do {
            return try await loop()
        } catch let error as DownloadError {
            return fail(error)
        } catch {
            // A segment's 200 not yet written must not hold its connection.
            restartBody?.body.abandon()
            record.state = .paused
            if !revalidating {
                record.recordedLength = length
                try? save()
            }
            closeUnusedPartial()
            return .stopped(record, revalidating: revalidating)
        }
    }

    private func fail(_ error: DownloadError) -> TransferOutcome {
        restartBody?.body.abandon()
        record.state = .failed
        record.error = error.message
        record.errorKind = error.kind
        if !revalidating {
            record.recordedLength = length
            try? save()
        }
        closeUnusedPartial()
        return .failed(record, error)
    }

    // MARK: The request loop

    /// How one attempt ended.
    enum AttemptResult {
        /// Every byte is in the partial file (or a 416 said it already was): verify and finish.
        case done
        /// Ask again: more bytes to fetch, a redirect followed, a segment's 200 to write.
        case again
        /// The partial file cannot be completed: empty it and start from zero.
        case restart(ResumePlanner.RestartReason)
        /// A failure for ``Retries`` (a retryable status with the server's `Retry-After`).
        case failed(DownloadError, retryAfter: Duration?)
        /// A revalidation got a 304: the destination is current.
        case notModified
    }

    private func loop() async throws -> TransferOutcome {
        record.state = .running
        try await store.lane.run { try self.openPartial() }
        var retries = Retries()
        var restarts = 0
        // The engine marked the task running when it started this transfer; only a retry (which reported
        // `.retrying`) needs it said again. One actor hop less per file.
        var announceRunning = false

        while true {
            try Task.checkCancellation()
            if let error = policy.deadlineError(elapsed: .now - started) { throw error }
            if announceRunning {
                await report(.running)
                announceRunning = false
            }
            let before = length
            let result: AttemptResult
            do {
                result = try await attempt()
            } catch let error as DownloadError where error.isRetryable {
                result = .failed(error, retryAfter: nil)
            }

            switch result {
            case .done:
                retries.succeeded(progressed: length > before)
                if let outcome = try await verifyAndFinish(restarts: &restarts) { return outcome }
            case .again:
                retries.succeeded(progressed: length > before)
            case .notModified:
                return try notModified()
            case .restart(let reason):
                retries.succeeded(progressed: length > before)
                try restartFromZero(reason, restarts: &restarts)
            case .failed(let error, let retryAfter):
                let target = route.url
                if route.forgetUnreachable(after: error) {
                    configuration.logger.info(
                        "redirect target unreachable; resolving the original URL again",
                        metadata: ["url": "\(target)", "original": "\(record.url)"])
                    record.resolvedURL = nil
                }
                let step = retries.step(
                    after: error, retryAfter: retryAfter, progressed: length > before, sharing: .alone,
                    policy: policy.retry, random: .random(in: 0..<1))
                try await carryOut(step, after: error, failures: retries.failures)
                announceRunning = true
            }
        }
    }

    /// Verifies a partial file that holds every byte and moves it into place; `nil` when it must start from zero.
    private func verifyAndFinish(restarts: inout Int) async throws -> TransferOutcome? {
        // Done without a body (a 416 for a partial file already complete): the prefix is hashed here.
        if unhashedPrefix > 0 { try rehashPrefix() }
        let digest = hasher.map { HeaderValues.hex($0.finalize()) }
        let verdict = ResumePlanner.verify(
            length: length, totalLength: record.totalLength, sha256: digest, expected: record.expectedSHA256,
            announced: reprDigest ?? record.reprDigestSHA256)
        switch verdict {
        case .verified:
            // Only for power-loss durability: the page cache already carries the bytes across a process death, and
            // the rename in `finish` is atomic either way. Outside the lane: flushing a large file must not hold up
            // the other transfers' file creations.
            if configuration.durability.syncsToDisk { try FileIO.fsync(fd, partialPath) }
            return try await store.lane.run { try self.finish(digest: digest) }
        case .restart(let reason):
            try restartFromZero(reason, restarts: &restarts)
            return nil
        case .fail(let error):
            discardPartial()
            throw error
        }
    }

    /// Carries out what ``Retries`` decided after a failed attempt: resume, wait, or end.
    private func carryOut(_ step: Retries.Step, after error: DownloadError, failures: Int) async throws {
        switch step {
        case .resumeNow:
            let aborts = try countSlowAbort()
            record.recordedLength = length
            try? save()
            configuration.logger.info(
                "slow attempt aborted; resuming", metadata: ["url": "\(route.url)", "reason": "\(error.message)"])
            await report(.retrying(attempt: aborts, delay: .zero, error: error))
        case .retry(let delay):
            if let error = policy.deadlineError(elapsed: .now - started, waiting: delay) { throw error }
            if !revalidating {
                record.recordedLength = length
                try? save()
            }
            configuration.logger.info(
                "retrying",
                metadata: [
                    "url": "\(route.url)", "attempt": "\(failures)", "delay": "\(delay)", "reason": "\(error.message)",
                ])
            await report(.retrying(attempt: failures, delay: delay, error: error))
            try await Task.sleep(for: delay)
        case .giveUp(let error):
            throw error
        case .leave, .handUp:
            // Only a segment connection leaves or hands up; a transfer is alone.
            throw error
        }
    }

    /// Counts one slow attempt aborted; throws ``DownloadError/tooSlow(aborts:bytesPerSecond:seconds:)`` past the
    /// low-speed limit's ``DownloadConfiguration/LowSpeedLimit/maximumAborts``.
    ///
    /// - Returns: The slow aborts of this run so far.
    func countSlowAbort() throws -> Int {
        guard let limit = configuration.lowSpeed else { return 0 }
        let aborts = slowAborts.add(1, ordering: .relaxed).newValue
        if aborts > limit.maximumAborts {
            throw DownloadError.tooSlow(
                aborts: aborts, bytesPerSecond: limit.bytesPerSecond, seconds: limit.duration.seconds)
        }
        return aborts
    }

    /// Empties the partial file and forgets what it held, so the next request starts from zero; throws once this
    /// has happened more than three times in one run.
    private func restartFromZero(_ reason: ResumePlanner.RestartReason, restarts: inout Int) throws {
        restarts += 1
        if reason == .digestMismatch { policy.bypassesCaches = true }
        // A server whose 206s cannot be read (no Content-Range, or a multipart answer to one range) would answer the
        // next probe and every segment the same way: the rest comes over one connection, asked for without a range.
        if reason == .malformedContentRange { segmentsDisabled = true }
        if restarts > 3 {
            restartBody?.body.abandon()
            let detail = "restarted from zero \(restarts - 1) times (\(reason.rawValue))"
            if reason == .digestMismatch {
                discardPartial()
                throw DownloadError.verificationFailed(detail)
            }
            throw DownloadError.unexpectedResponse(detail)
        }
        configuration.logger.info(
            "restarting from zero", metadata: ["url": "\(record.url)", "reason": "\(reason.rawValue)"])
        // The partial file is empty now, so the validators on disk cannot be mistaken for its bytes'; the next
        // response's validators (and digest) are saved before any byte of it is written.
        try truncate()
        if record.segments != nil { FileIO.unlink(store.segmentLogPath(record)) }
        record.segments = nil
        record.validators = .init()
        reprDigest = nil
        record.reprDigestSHA256 = nil
    }
}
