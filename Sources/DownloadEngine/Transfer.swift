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

/// The thin I/O shell around ``ResumePlanner``: one task's request loop, partial file and digest.
///
/// A `Transfer` is used by one task at a time: the body-streaming child runs while its parent awaits it, which is
/// why the class is `@unchecked Sendable`.
final class Transfer: @unchecked Sendable {
    private var record: TaskRecord
    private let store: StateStore
    private let transport: any Transport
    private let configuration: DownloadConfiguration
    /// The bandwidth limits every request of this task is read under (the engine's and its own), if any.
    private let pacing: ReadPacing?
    private let report: @Sendable (TransferReport) async -> Void

    /// Whether a record of this task is on disk (loaded, or saved by the engine or a transfer before).
    private var recordOnDisk: Bool
    /// Set while a completed task asks whether its file changed (``Revalidation``), until a new representation's
    /// head arrives: meanwhile nothing is saved, so the completed record on disk stays the truth.
    private var revalidating: Bool
    private var fd: Int32 = -1
    private var partialPath: String
    private var length: Int64 = 0
    /// `nil` when the configuration computes no digest.
    private var hasher: SHA256?
    /// The bytes at the start of the partial file, kept from an earlier run, that `hasher` does not cover yet: the
    /// next body's hash pipeline reads them back first, while the request is on its way.
    private var unhashedPrefix: Int64 = 0
    private var reprDigest: String?
    private let activity = ActivityClock()
    private let started = ContinuousClock.now

    /// Whether the partial file was extended to the full length for segments (so it must be emptied even when no
    /// byte of it is done).
    private var preallocated = false
    /// Set when a segment's Range got a 200: the rest of this run uses one connection.
    private var segmentsDisabled = false
    /// Set by a restart after a digest mismatch: every later request of this run asks the caches on its way not to
    /// answer from a stored response (`Cache-Control: no-cache`, and `Pragma: no-cache` for HTTP/1.0 caches). A
    /// caching proxy that stored the bad bytes would otherwise serve them to every restart: squid with its shipped
    /// configuration revalidated, got a 304 from the origin and sent its stored copy again, three times.
    private var bypassesCaches = false

    /// Slow attempts aborted in this run (see ``DownloadConfiguration/LowSpeedLimit``), single-stream and segments
    /// alike: atomic, as the segments count from their own tasks (and no lock is allocated per file).
    private let slowAborts = Atomic<Int>(0)
    /// The watchdog entry of the latest attempt, whose low-speed watch stops when the attempt turns into segments.
    private var watchedAttempt: Watchdog.Entry?

    private var lastProgressAt = ContinuousClock.now
    private var lastProgressBytes: Int64 = 0
    private var speed: Double = 0

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
        self.report = report
        self.partialPath = store.partialPath(record)
        self.reprDigest = record.reprDigestSHA256
        self.hasher = configuration.verification.computesSHA256 ? SHA256() : nil
    }

    deinit { if fd >= 0 { FileIO.close(fd) } }

    /// Runs until the file is in place, the task fails, or the surrounding task is cancelled.
    func run() async -> TransferOutcome {
        do {
            return try await loop()
        } catch let error as DownloadError {
            return fail(error)
        } catch {
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

    /// A revalidation that ended before a new representation's head leaves no partial file: the destination is
    /// the download.
    private func closeUnusedPartial() {
        guard revalidating, fd >= 0 else { return }
        FileIO.close(fd)
        fd = -1
        FileIO.unlink(partialPath)
    }

    private func save() throws {
        try store.save(record)
        recordOnDisk = true
    }

    /// The most bytes a partial file holds before the first record of its task is saved.
    ///
    /// A record costs a new inode, a JSON encoding and a rename: for many small files that was the larger part of
    /// the whole cost. Until then the task's validators are a line of the task log, appended before the first
    /// byte is written, so a `kill -9` costs such a task no more than one with a record file.
    static let unrecordedLimit: Int64 = 256 << 10

    /// Saves the record before the bytes of a body are written, so that bytes in the partial file are never on
    /// disk without the validators they belong to; `changed` tells whether the record differs from the one on disk.
    ///
    /// A task with no record file yet (a new task) is the exception: its record goes to the task log instead (one
    /// appended line, no inode), and its first record file is saved only when its partial file is about to hold
    /// more than ``unrecordedLimit`` bytes (by the writer, on the transport's thread). A small file is written, verified
    /// and moved into place with no record file at all. Retries, pauses and failures save the record as usual.
    ///
    /// - Returns: The save the writer must make before crossing ``unrecordedLimit``, if one is still owed.
    private func saveBeforeWriting(changed: Bool) throws -> (@Sendable () throws -> Void)? {
        if recordOnDisk {
            if changed { try save() }
            return nil
        }
        if changed { try store.appendToLog(record) }
        return { [store, record] in try store.save(record) }
    }

    // MARK: The request loop

    private enum AttemptResult {
        case done
        case moreToFetch
        case redirect(String, status: Int)
        case reresolve
        case restart(ResumePlanner.RestartReason)
        case retry(DownloadError, after: Duration?)
        /// Aborted by the low-speed limit: resumed at once, counted apart from the retries.
        case slow(DownloadError)
        /// A revalidation got a 304: the destination is current.
        case notModified
    }

    private func loop() async throws -> TransferOutcome {
        record.state = .running
        try await store.lane.run { try self.openPartial() }
        var failures = 0
        var restarts = 0
        // Responses in a row that could not be parsed and brought no byte: a server that always answers this way.
        var malformedInARow = 0
        var hops = 0
        var url = record.resolvedURL ?? record.url
        var crossOrigin = !sameOrigin(url, record.url)

        while true {
            try Task.checkCancellation()
            if let overall = configuration.timeouts.overall, ContinuousClock.now - started > overall {
                throw DownloadError.deadlineExceeded(overall.seconds)
            }
            await report(.running)
            let before = length
            let result: AttemptResult
            do {
                result = try await attempt(url: url, usingResolvedURL: url != record.url, crossOrigin: crossOrigin)
            } catch let error as DownloadError where DownloadError.slowTransfer ~= error {
                result = .slow(error)
            } catch let error as DownloadError where error.isRetryable {
                result = .retry(error, after: nil)
                // A redirect target that cannot be connected to is an edge that is down: the retry asks the original
                // URL again, which may send the client to an edge that works. Counted as a failure like any retry,
                // so an origin that keeps redirecting to dead edges still runs out of retries.
                if error.isConnectFailure, url != record.url {
                    configuration.logger.info(
                        "redirect target unreachable; resolving the original URL again",
                        metadata: ["url": "\(url)", "original": "\(record.url)"])
                    url = record.url
                    hops = 0
                    crossOrigin = false
                    record.resolvedURL = nil
                }
            }
            if length > before { failures = 0 }
            if case .retry(let error, _) = result, DownloadError.malformedResponse ~= error, length == before {
                malformedInARow += 1
                if malformedInARow >= 3 {
                    throw DownloadError.unexpectedResponse("\(error.message) (3 times in a row)")
                }
            } else {
                malformedInARow = 0
            }

            switch result {
            case .done:
                // Done without a body (a 416 for a partial file already complete): the prefix is hashed here.
                if unhashedPrefix > 0 { try rehashPrefix() }
                let digest = hasher.map { HeaderValues.hex($0.finalize()) }
                let verdict = ResumePlanner.verify(
                    length: length, totalLength: record.totalLength, sha256: digest, expected: record.expectedSHA256,
                    announced: reprDigest ?? record.reprDigestSHA256)
                switch verdict {
                case .verified:
                    // Only for power-loss durability: the page cache already carries the bytes across a process
                    // death, and the rename in `finish` is atomic either way. Outside the lane: flushing a large file
                    // must not hold up the other transfers' file creations.
                    if configuration.durability.syncsToDisk { try FileIO.fsync(fd, partialPath) }
                    return try await store.lane.run { try self.finish(digest: digest) }
                case .restart(let reason):
                    try restartFromZero(reason, restarts: &restarts)
                case .fail(let error):
                    discardPartial()
                    throw error
                }
            case .moreToFetch:
                continue
            case .notModified:
                return try notModified()
            case .redirect(let location, let status):
                hops += 1
                if hops > configuration.redirects.maximumHops {
                    throw DownloadError.tooManyRedirects(configuration.redirects.maximumHops, url: record.url)
                }
                let target = try ResumePlanner.redirectTarget(location, from: url, status: status)
                let hop = RedirectHop(from: url, to: target, status: status)
                if hops == 1 { record.redirects = [] }
                record.redirects.append(hop)
                record.resolvedURL = hop.to
                if !sameOrigin(hop.to, url) { crossOrigin = true }
                url = hop.to
                // Not saved here: the hops reach the disk with the validators, before the first byte is written.
                // Killed before that, the next run simply follows the redirects again.
                await report(.redirected(hop, record))
            case .reresolve:
                url = record.url
                hops = 0
                crossOrigin = false
                record.resolvedURL = nil
            case .restart(let reason):
                try restartFromZero(reason, restarts: &restarts)
            case .slow(let error):
                let aborts = try countSlowAbort()
                record.recordedLength = length
                try? save()
                configuration.logger.info(
                    "slow attempt aborted; resuming", metadata: ["url": "\(url)", "reason": "\(error.message)"])
                await report(.retrying(attempt: aborts, delay: .zero, error: error))
            case .retry(let error, let after):
                failures += 1
                guard
                    let delay = configuration.retry.delay(
                        forRetry: failures, retryAfter: after, random: .random(in: 0..<1))
                else {
                    if configuration.retry.maximumRetries == 0 { throw error }
                    throw DownloadError.retriesExhausted(failures - 1, last: error)
                }
                if let overall = configuration.timeouts.overall, ContinuousClock.now - started + delay > overall {
                    throw DownloadError.deadlineExceeded(overall.seconds)
                }
                if !revalidating {
                    record.recordedLength = length
                    try? save()
                }
                configuration.logger.info(
                    "retrying",
                    metadata: [
                        "url": "\(url)", "attempt": "\(failures)", "delay": "\(delay)", "reason": "\(error.message)",
                    ])
                await report(.retrying(attempt: failures, delay: delay, error: error))
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Counts one slow attempt aborted; throws ``DownloadError/tooSlow(aborts:bytesPerSecond:seconds:)`` past the
    /// low-speed limit's ``DownloadConfiguration/LowSpeedLimit/maximumAborts``.
    ///
    /// - Returns: The slow aborts of this run so far.
    private func countSlowAbort() throws -> Int {
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
        if reason == .digestMismatch { bypassesCaches = true }
        // A server whose 206s cannot be read (no Content-Range, or a multipart answer to one range) would answer the
        // next probe and every segment the same way: the rest comes over one connection, asked for without a range.
        if reason == .malformedContentRange { segmentsDisabled = true }
        if restarts > 3 {
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

    private func sameOrigin(_ a: String, _ b: String) -> Bool {
        guard let ua = URL(string: a), let ub = URL(string: b) else { return false }
        return HeaderValues.sameOrigin(ua, ub)
    }

    /// One request: send, decide, and stream the body if the decision keeps it.
    private func attempt(url: String, usingResolvedURL: Bool, crossOrigin: Bool) async throws -> AttemptResult {
        if record.segments != nil {
            return try await runSegments(
                first: nil, url: url, usingResolvedURL: usingResolvedURL, crossOrigin: crossOrigin)
        }
        // A revalidation asks for the whole representation: bytes a partial file may hold are not of the new one.
        if revalidating, length > 0 { try truncate() }
        let probe = configuration.connectionsPerFile > 1 && !segmentsDisabled ? Self.firstSegmentLength : nil
        let plan = ResumePlanner.request(offset: length, validators: record.validators, probe: probe)
        if case .full = plan, length > 0 { try truncate() }
        var headers: [(name: String, value: String)] = [("Accept-Encoding", "identity")]
        if configuration.verification.computesSHA256 { headers.append(("Want-Repr-Digest", "sha-256=1")) }
        var range = "none"
        switch plan {
        case .full: break
        case .resume(let offset, let ifRange):
            range = "bytes=\(offset)-"
            headers.append(("Range", range))
            headers.append(("If-Range", ifRange))
        case .probe(let length):
            range = "bytes=0-\(length - 1)"
            headers.append(("Range", range))
        }
        if revalidating {
            headers += Revalidation.conditionalHeaders(etag: record.etag, lastModified: record.lastModified)
        }
        headers += userHeaders(crossOrigin: crossOrigin)
        let request = TransportRequest(url: url, headers: headers, pacing: pacing?.watched(by: activity))
        configuration.logger.debug("request sent", metadata: ["url": "\(url)", "range": "\(range)"])
        activity.touch()
        return try await withWatchdog { [self] in
            let response = try await transport.execute(request)
            activity.touch()
            return try await handle(
                response, plan: plan, url: url, usingResolvedURL: usingResolvedURL, crossOrigin: crossOrigin)
        }
    }

    /// The configuration's and the request's headers for one request (see ``RequestHeaders/user``), and after a
    /// digest mismatch the fields that keep caches from answering (``bypassesCaches``) unless the user set them.
    private func userHeaders(crossOrigin: Bool) -> [(name: String, value: String)] {
        var headers = RequestHeaders.user(
            configuration: configuration.headers, request: record.requestHeaders,
            sensitive: configuration.redirects.sensitiveHeaders, crossOrigin: crossOrigin)
        if bypassesCaches {
            for name in ["Cache-Control", "Pragma"]
            where !headers.contains(where: { $0.name.lowercased() == name.lowercased() }) {
                headers.append((name, "no-cache"))
            }
        }
        return headers
    }

    private func handle(
        _ response: TransportResponse, plan: ResumePlanner.Request, url: String, usingResolvedURL: Bool,
        crossOrigin: Bool
    ) async throws -> AttemptResult {
        let head = ResumePlanner.ResponseHead(response)
        if let digest = response.header("repr-digest").flatMap(HeaderValues.sha256FromReprDigest),
            (200...299).contains(response.status)
        {
            reprDigest = digest
        }
        // A body the decision does not stream must not hold the connection; after a drain this does nothing.
        defer { response.body.abandon() }
        configuration.logger.debug("response", metadata: ["url": "\(url)", "status": "\(response.status)"])
        if case .probe = plan, response.status == 416 {
            // An empty representation (or a server refusing ranges this way): fetch it whole over one connection.
            segmentsDisabled = true
            return .moreToFetch
        }
        if revalidating {
            let conditional = record.etag != nil || record.lastModified != nil
            if Revalidation.answer(status: response.status, conditional: conditional) == .notModified {
                return .notModified
            }
            if (200...299).contains(response.status) {
                startNewRepresentation(
                    reprDigest: response.header("repr-digest").flatMap(HeaderValues.sha256FromReprDigest))
            }
        }
        let decision = ResumePlanner.decide(
            head, request: plan, validators: record.validators, url: url, usingResolvedURL: usingResolvedURL,
            now: Date()
        )
        configuration.logger.debug("resume decision", metadata: ["url": "\(url)", "decision": "\(decision)"])
        switch decision {
        case .redirect(let location):
            return .redirect(location, status: response.status)
        case .reresolve:
            return .reresolve
        case .retry(let after):
            return .retry(.retryableHTTPStatus(response.status, url: url), after: after)
        case .refuse(let error):
            return .retry(error, after: nil)
        case .fail(let error):
            throw error
        case .restart(let reason):
            return .restart(reason)
        case .finish:
            return .done
        case .restartWithBody(let total):
            try truncate()
            if record.chooseName(contentDisposition: response.header("content-disposition"), store: store) {
                await report(.named(record))
            }
            let neverLogged = !recordOnDisk && record.validators == .init()
            record.validators = .init(
                etag: head.etag, lastModified: head.lastModified, totalLength: total, contentType: head.contentType)
            record.reprDigestSHA256 = reprDigest
            if segmentable(response, total: total) {
                record.segments = []
                return try await runSegments(
                    first: .init(body: response.body, position: 0, end: nil, url: url), url: url,
                    usingResolvedURL: usingResolvedURL, crossOrigin: crossOrigin)
            }
            // A new task whose whole small body is already in memory is written without a log line before it: killed
            // before its completed line, it leaves a partial file that no record claims, which the next run deletes
            // as an orphan and fetches again (at most ``unrecordedLimit`` bytes, the trade already made for a kill
            // between the completed line and the rename); the line would cost a JSON encoding and a write per file.
            let inMemory = neverLogged && (total ?? .max) <= Self.unrecordedLimit && response.body.isComplete()
            let owed = try saveBeforeWriting(changed: !inMemory)
            let end = try await stream(response.body, skip: 0, expectedEnd: total, owed: owed)
            return total.map { end >= $0 } ?? true ? .done : .moreToFetch
        case .append(let total), .skipOverlap(_, let total):
            // A resume of a partial file whose task never chose a name (written by a run without one) names it now.
            let named = record.chooseName(contentDisposition: response.header("content-disposition"), store: store)
            if named { await report(.named(record)) }
            var skip: Int64 = 0
            if case .skipOverlap(let overlap, _) = decision { skip = overlap }
            var validators = record.validators
            if let total { validators.totalLength = total }
            if let etag = head.etag { validators.etag = etag }
            if let lastModified = head.lastModified { validators.lastModified = lastModified }
            if let contentType = head.contentType { validators.contentType = contentType }
            let changed = named || validators != record.validators || record.reprDigestSHA256 != reprDigest
            record.validators = validators
            record.reprDigestSHA256 = reprDigest
            let range = head.contentRange.flatMap(ContentRange.init(parsing:))
            let rangeEnd = range?.last.map { $0 + 1 }
            if skip == 0, plan != .full, segmentable(response, total: validators.totalLength) {
                record.segments = [0..<length]
                var end: Int64?
                if case .probe = plan { end = rangeEnd }
                return try await runSegments(
                    first: .init(body: response.body, position: length, end: end, url: url), url: url,
                    usingResolvedURL: usingResolvedURL, crossOrigin: crossOrigin)
            }
            let owed = try saveBeforeWriting(changed: changed)
            let end = try await stream(response.body, skip: skip, expectedEnd: rangeEnd, owed: owed)
            if let total = validators.totalLength, end >= total { return .done }
            if validators.totalLength == nil, let rangeEnd, end >= rangeEnd { return .moreToFetch }
            return .moreToFetch
        }
    }

    /// Streams the body into the partial file through a ``PartialFileWriter``, hashing as it goes, with a progress
    /// event every ``DownloadConfiguration/progressInterval``. Returns the partial file's new length.
    private func stream(
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
    private func drainWithProgress(_ body: TransportBody, into writer: PartialFileWriter) async throws {
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

    private func progress(bytes: Int64, force: Bool) async {
        let now = ContinuousClock.now
        let elapsed = (now - lastProgressAt).seconds
        guard force || elapsed >= configuration.progressInterval.seconds else { return }
        if elapsed > 0.05 {
            let instant = Double(bytes - lastProgressBytes) / elapsed
            speed = speed == 0 ? instant : 0.7 * speed + 0.3 * instant
            lastProgressAt = now
            lastProgressBytes = bytes
        }
        let total = record.totalLength
        let eta = total.flatMap { speed > 0 ? Double(max(0, $0 - bytes)) / speed : nil }
        await report(.progress(.init(bytes: bytes, total: total, bytesPerSecond: speed, eta: eta)))
    }

    /// Runs `body` watched by the shared ``Watchdog``: it throws ``DownloadError/idleTimeout(_:)`` when no bytes
    /// arrived for the idle timeout, ``DownloadError/deadlineExceeded(_:)`` past the overall deadline.
    private func withWatchdog<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let entry = Watchdog.Entry(
            activity: activity, idle: configuration.timeouts.idle, overall: configuration.timeouts.overall,
            started: started, lowSpeed: configuration.lowSpeed)
        watchedAttempt = entry
        return try await Watchdog.shared.run(entry, body)
    }

    // MARK: Segments

    /// What the first request of a download that may be segmented asks for: small, because the other connections
    /// start only once its head is in, and nothing else runs while it does.
    static let firstSegmentLength: Int64 = 64 << 10

    /// Whether a response lets the rest of the file be fetched in segments (see
    /// ``ResumePlanner/allowsSegments(_:total:held:minimumSegment:)``), with more than one connection configured.
    private func segmentable(_ response: TransportResponse, total: Int64?) -> Bool {
        guard configuration.connectionsPerFile > 1, !segmentsDisabled else { return false }
        return ResumePlanner.allowsSegments(
            .init(response), total: total, held: length, minimumSegment: configuration.minimumSegmentSize,
            acceptRanges: response.header("accept-ranges"))
    }

    /// Fetches what ``TaskRecord/segments`` leaves over several connections (see ``SegmentedDownload``).
    ///
    /// - Parameter first: A response already streaming from the start of a range to fetch (connection 0's).
    private func runSegments(
        first: SegmentedDownload.FirstBody?, url: String, usingResolvedURL: Bool, crossOrigin: Bool
    ) async throws -> AttemptResult {
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
        let original = record.url
        let download = SegmentedDownload(
            plan: plan,
            context: .init(
                transport: transport, configuration: configuration, originalURL: original,
                validators: record.validators, ifRange: etag, fd: fd, path: partialPath, log: log,
                connections: configuration.connectionsPerFile, started: started, pacing: pacing,
                countSlowAbort: { [self] in try countSlowAbort() },
                headers: { [self] url in userHeaders(crossOrigin: crossOrigin || !sameOrigin(url, original)) },
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
            if let retry = error as? SegmentedDownload.Retry { return .retry(retry.error, after: retry.after) }
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
            // A 200 to a segment's Range is the whole representation: restart with it, as one connection would.
            do {
                return try await handle(
                    response, plan: .full, url: url, usingResolvedURL: usingResolvedURL, crossOrigin: crossOrigin)
            } catch is CancellationError where !Task.isCancelled {
                // Its request was cancelled with its connection after all; this task was not: ask again.
                return .restart(reason)
            }
        }
    }

    // MARK: Files

    /// Opens the partial file, keeping its bytes when a record names their validators: a record file, or a line of
    /// the task log (the task was killed before its first record file). A new task's partial file starts empty
    /// without a `fstat` or a re-hash.
    private func openPartial() throws {
        let keeps = recordOnDisk || record.validators != .init()
        let flags = O_RDWR | O_CREAT | (keeps ? 0 : O_TRUNC)
        do {
            fd = try FileIO.open(partialPath, flags)
        } catch {
            // The state directory was created with the engine; only someone deleting it since makes this needed.
            try FileIO.makeDirectories(LexicalPath.parent(partialPath))
            fd = try FileIO.open(partialPath, flags)
        }
        length = 0
        if keeps, let segments = record.segments {
            // What the record saved plus what the segment log adds, clipped to the file (a partial file emptied or
            // replaced by hand holds none of it). The digest is computed from byte 0 as the segments complete.
            let size = try FileIO.size(fd, partialPath)
            let logged = SegmentLog.ranges(at: store.segmentLogPath(record))
            let done = SegmentPlan.complement(
                of: SegmentPlan.complement(of: segments + logged, in: 0..<size), in: 0..<size)
            record.segments = done
            length = done.reduce(0) { $0 + Int64($1.count) }
            preallocated = size > 0
        } else if keeps {
            length = try FileIO.size(fd, partialPath)
            if configuration.verification.computesSHA256, length > 0 {
                hasher = SHA256()
                unhashedPrefix = length
            }
        }
        lastProgressBytes = length
    }

    /// Hashes the kept prefix of the partial file here and now, when no body will (see ``unhashedPrefix``).
    private func rehashPrefix() throws {
        var hasher = SHA256()
        try FileIO.hashPrefix(fd, partialPath, length: unhashedPrefix, into: &hasher)
        self.hasher = hasher
        unhashedPrefix = 0
    }

    private func truncate() throws {
        // Not when already empty: besides the system call, truncating a file makes ext4 flush it on close
        // (`auto_da_alloc`).
        if length > 0 || preallocated { try FileIO.truncate(fd, partialPath, to: 0) }
        preallocated = false
        length = 0
        unhashedPrefix = 0
        hasher = configuration.verification.computesSHA256 ? SHA256() : nil
        lastProgressBytes = 0
    }

    /// Moves the verified partial file into place (see `ResumePlanner.verify`); on the lane, after the partial file was
    /// flushed when the durability asks for it.
    private func finish(digest: String?) throws -> TransferOutcome {
        let destination = store.destinationPath(record)
        if !record.overwrite, record.replacing != true, FileIO.exists(destination) {
            throw DownloadError.destinationExists(destination)
        }
        // With a record on disk, the completed record is saved before the rename: killed in between, the next run
        // finds a completed record without its destination, restarts the task (see `DownloadEngine.add`) and moves
        // the verified partial into place after a 416. Saved after the rename, a kill in between left the file in
        // place and a record that was not completed: the next run fetched everything again and failed with
        // destination-exists.
        //
        // Without a record on disk (a task that never passed 256 KiB) no record file is written: the completed
        // record is appended to the state directory's task log instead, so a rerun still finds the task done,
        // while a record file and its rename would have cost a new inode per file, the larger part of the cost of
        // many small files. Killed between the append and the rename, the next run finds the task completed
        // without its destination and fetches that small body again (its partial file, claimed by no unfinished
        // task, is deleted as an orphan).
        var completed = record
        completed.state = .completed
        completed.sha256 = digest
        completed.recordedLength = length
        completed.error = nil
        completed.errorKind = nil
        completed.replacing = nil
        let segmented = completed.segments != nil
        completed.segments = nil
        if recordOnDisk { try store.save(completed) } else { try store.appendToLog(completed) }
        try FileIO.moveIntoPlace(partialPath, destination, sync: configuration.durability.syncsToDisk)
        if segmented { FileIO.unlink(store.segmentLogPath(record)) }
        record = completed
        FileIO.close(fd)
        fd = -1
        return .completed(record, sha256: digest, bytes: length, onDisk: recordOnDisk)
    }

    /// A revalidation's 304: the destination is current and stays; the record on disk is still the completed one.
    /// An expected SHA-256 given with this run must match the one recorded for the file.
    private func notModified() throws -> TransferOutcome {
        if let expected = record.expectedSHA256, let recorded = record.sha256, expected != recorded {
            throw DownloadError.verificationFailed(
                "the server says the file is not modified, and its SHA-256 is \(recorded), not \(expected)")
        }
        closeUnusedPartial()
        revalidating = false
        record.state = .completed
        record.replacing = nil
        record.error = nil
        record.errorKind = nil
        return .completed(
            record, sha256: record.sha256, bytes: record.recordedLength, onDisk: recordOnDisk, notModified: true)
    }

    /// A revalidation's 2xx: a new representation, downloaded from zero as any download from here on (its
    /// validators are saved before its first byte), which replaces the destination once complete and verified.
    private func startNewRepresentation(reprDigest: String?) {
        revalidating = false
        record.validators = .init()
        record.sha256 = nil
        record.replacing = true
        self.reprDigest = reprDigest
        record.reprDigestSHA256 = nil
    }

    private func discardPartial() {
        try? truncate()
        if record.segments != nil { FileIO.unlink(store.segmentLogPath(record)) }
        record.segments = nil
        record.validators = .init()
        record.reprDigestSHA256 = nil
    }
}
