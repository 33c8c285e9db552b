import Crypto
import Foundation
import Logging

/// One file fetched over several connections at once, each with `Range` and the same `If-Range`, into a partial
/// file of the full length.
///
/// Every request follows the same ``RequestPolicy`` as a single connection's (its fields, its redirects, what its
/// response means) and every failure the same ``Retries``. Whatever proves another representation (another
/// validator or length, a 200 to a Range, a bad `Content-Range`) ends the whole download with
/// ``Outcome/restart(_:response:)``: the transfer empties the partial file and starts from zero, so two versions are
/// never spliced. A connection refused with 503 or 429 while others work (a per-client connection cap) gives its
/// range back and ends, so the download goes on with fewer connections; any other retryable failure is retried by
/// that connection after a backoff. The last connection's failure ends the run with that error, for the transfer's
/// own retries.
///
/// With a ``DownloadConfiguration/LowSpeedLimit``, a segment's request slower than the limit is aborted by the
/// watchdog; its connection gives the rest of the segment back and steps aside for ``slowStepBack``, so that a
/// connection waiting for work takes it with a new request (`Range` from the bytes kept, the same `If-Range`), and
/// connections left without work wait while any segment still runs instead of leaving. The transfer counts the
/// slow aborts (``Context/countSlowAbort``) and ends the download past its limit.
///
/// The SHA-256 follows the done prefix: a child task reads back and hashes the bytes below the first byte not yet
/// done (from the page cache), so most of the hashing overlaps the transfer.
final class SegmentedDownload: @unchecked Sendable {
    enum Outcome {
        /// Every byte is on disk; the digest state, when computed.
        case complete(SHA256?)
        /// The bytes on disk cannot be completed: start again from zero, with `response` (a 200 to a segment's
        /// Range: the whole representation, as a single connection's restart would use it) when there is one.
        case restart(ResumePlanner.RestartReason, response: TransportResponse?)
    }

    /// A retryable failure with the server's `Retry-After`, if any.
    struct Retry: Error {
        var error: DownloadError
        var after: Duration?
    }

    /// Ends every connection: the representation changed. A 200 that may become the restart's body waits in the
    /// board (``SegmentBoard/offerRestart(_:)``): the task group rethrows only one child's error.
    private struct Restart: Error {
        var reason: ResumePlanner.RestartReason
    }

    /// A response the transfer already received that continues at a pending range's start.
    struct FirstBody: Sendable {
        var body: TransportBody
        var position: Int64
        /// Where the response ends (the end of its `Content-Range`), or `nil` when it runs to the end of the file.
        var end: Int64?
        var url: String
    }

    struct Context: Sendable {
        var transport: any Transport
        var configuration: DownloadConfiguration
        /// The transfer's request rules: every segment's request carries the fields a single connection's would.
        var policy: RequestPolicy
        /// Where each connection's requests start.
        var route: Route
        var validators: ResumePlanner.Validators
        var ifRange: String
        var fd: Int32
        var path: String
        var log: SegmentLog
        var connections: Int
        var started: ContinuousClock.Instant
        /// The bandwidth limits every segment's body is read under, if any.
        var pacing: ReadPacing?
        /// Counts a slow segment aborted; throws when the download has aborted too many.
        var countSlowAbort: @Sendable () throws -> Int
        var progress: @Sendable (_ bytes: Int64) async -> Void
    }

    private let context: Context
    let board: SegmentBoard
    /// The owner of this download's lanes: each connection's requests keep to a connection of their own, also over
    /// HTTP/2 (see ``TransportLane``).
    private let laneOwner = TransportLane.newOwner()

    init(plan: SegmentPlan, context: Context) {
        self.context = context
        self.board = SegmentBoard(plan)
    }

    private var configuration: DownloadConfiguration { context.configuration }

    /// How long a connection whose segment was aborted for slowness waits before asking for work again: two of
    /// the polls of a connection waiting for work, which takes the aborted segment's rest first.
    static let slowStepBack: Duration = .milliseconds(200)

    /// Runs the connections until every byte is on disk, the representation changes, or the last connection fails.
    ///
    /// - Parameters:
    ///   - first: A body already streaming from the start of a pending range; it becomes connection 0's segment.
    ///   - hashing: Whether to compute the SHA-256 (from byte 0: the done prefix is read back from the file).
    func run(first: FirstBody?, hashing: Bool) async throws -> Outcome {
        async let digest = hashing ? hashDonePrefix() : nil
        do {
            try await runConnections(first: first)
        } catch let restart as Restart {
            // A 200 kept as the restart's body still streams on its lane's connection, which stays open (the
            // transport closes it when it shuts down).
            let response = board.takeRestartResponse()
            if response == nil { await context.transport.releaseLanes(of: laneOwner) }
            return .restart(restart.reason, response: response)
        } catch {
            // A 200 offered as a restart's body by one connection while another's error ended the run.
            board.takeRestartResponse()?.body.abandon()
            await context.transport.releaseLanes(of: laneOwner)
            throw error
        }
        await context.transport.releaseLanes(of: laneOwner)
        return .complete(try await digest?.state)
    }

    private func runConnections(first: FirstBody?) async throws {
        let count = max(1, context.connections)
        // Claimed before any other connection starts, so none takes the range this body already streams into: a
        // bounded response exactly its range (the rest is divided among all connections, its own included once it
        // is done); one running to the end of the file the first of the divided ranges.
        var initial: (segment: SegmentPlan.Segment, first: FirstBody)?
        let segment = board.withPlan { plan -> SegmentPlan.Segment? in
            guard let first else {
                plan.divide(into: count)
                return nil
            }
            if let end = first.end {
                defer { plan.divide(into: count) }
                return plan.claim(0, exactly: first.position..<end, now: .now)
            }
            plan.divide(into: count)
            let piece = plan.pending.first { $0.lowerBound == first.position }
            return piece.flatMap { plan.claim(0, exactly: $0, now: .now) }
        }
        if let first {
            if let segment { initial = (segment, first) } else { first.body.abandon() }
        }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for connection in 0..<count {
                board.enter(connection)
                let start = connection == 0 ? initial : nil
                group.addTask { [self] in
                    try await self.connection(connection, initial: start)
                    return true
                }
            }
            group.addTask { [self] in
                await ticker()
                return false
            }
            var workers = count
            while let isWorker = try await group.next() {
                if isWorker { workers -= 1 }
                if workers == 0 { group.cancelAll() }
            }
        }
        // Every connection ended without an error: they did the work, or the last ones gave up their ranges after
        // their own retries and others had already left.
        guard board.snapshot.isComplete else {
            throw Retry(error: .network("every connection of the segmented download gave up"), after: nil)
        }
    }

    /// A progress report every ``DownloadConfiguration/progressInterval`` until cancelled.
    private func ticker() async {
        while (try? await Task.sleep(for: configuration.progressInterval)) != nil {
            await context.progress(board.snapshot.doneBytes)
        }
    }

    // MARK: One connection

    private func connection(
        _ connection: Int, initial: (segment: SegmentPlan.Segment, first: FirstBody)?
    ) async throws {
        // The first body is given up if the connection ends before streaming it (harmless after it ended).
        let firstBody = initial?.first.body
        defer {
            firstBody?.abandon()
            board.exit(connection)
        }
        var route = context.route
        if let first = initial?.first {
            route = Route(original: route.original, at: first.url, crossOrigin: route.crossOrigin)
        }
        var retries = Retries()
        var initial = initial
        while true {
            try Task.checkCancellation()
            let segment: SegmentPlan.Segment
            let body = initial?.first.body
            if let claimed = initial?.segment {
                segment = claimed
                initial = nil
            } else {
                // With a low-speed limit, a running segment may yet be aborted and give its rest back: stay for it.
                let waits = configuration.lowSpeed != nil
                switch board.withPlan({ $0.claim(connection, now: .now, waitsWhileRunning: waits) }) {
                case .segment(let claimed):
                    segment = claimed
                case .wait:
                    try await Task.sleep(for: .milliseconds(100))
                    continue
                case .none:
                    return
                }
            }
            do {
                let after = try await fetch(segment, connection: connection, route: &route, body: body)
                retries.succeeded(progressed: after > segment.position)
            } catch let retry as Retry {
                let progressed = board.withPlan { plan in
                    defer { plan.release(connection) }
                    return (plan.active[connection]?.position ?? segment.position) > segment.position
                }
                _ = route.forgetUnreachable(after: retry.error)
                let step = retries.step(
                    after: retry.error, retryAfter: retry.after, progressed: progressed,
                    sharing: board.isLast(connection) ? .last : .withOthers, policy: context.policy.retry,
                    random: .random(in: 0..<1))
                switch step {
                case .resumeNow:
                    let aborts = try context.countSlowAbort()
                    configuration.logger.info(
                        "slow segment aborted; its rest goes back to the pending ranges",
                        metadata: ["url": "\(route.url)", "aborts": "\(aborts)", "reason": "\(retry.error.message)"])
                    try await Task.sleep(for: Self.slowStepBack)
                case .retry(let delay):
                    if let error = context.policy.deadlineError(elapsed: .now - context.started, waiting: delay) {
                        throw error
                    }
                    configuration.logger.info(
                        "segment retrying",
                        metadata: [
                            "url": "\(route.url)", "attempt": "\(retries.failures)", "reason": "\(retry.error.message)",
                        ])
                    try await Task.sleep(for: delay)
                case .leave:
                    if let status = retry.error.status, status == 503 || status == 429 {
                        configuration.logger.info(
                            "connection refused by the server; going on with fewer connections",
                            metadata: ["url": "\(route.url)", "status": "\(status)"])
                    }
                    return
                case .handUp:
                    throw retry
                case .giveUp(let error):
                    throw error
                }
            }
        }
    }

    /// Requests the rest of `segment` (or streams `body`, a response already received for it) and writes it.
    ///
    /// - Returns: The segment's position afterwards.
    private func fetch(
        _ segment: SegmentPlan.Segment, connection: Int, route: inout Route, body: TransportBody?
    ) async throws -> Int64 {
        let activity = ActivityClock()
        // The segment's own position, so that the low-speed watch counts this request's bytes from there.
        activity.advance(to: segment.position)
        if let body {
            return try await stream(body, skip: 0, segment: segment, connection: connection, activity: activity)
        }
        while true {
            // A Retry-After holds back every new request of the download, not only the refused one's.
            let wait = board.notBefore - .now
            if wait > .zero { try await Task.sleep(for: wait) }
            let end = board.withPlan { $0.end(of: connection) } ?? segment.end
            let plan = ResumePlanner.Request.resume(offset: segment.position, ifRange: context.ifRange)
            let request = TransportRequest(
                url: route.url, headers: context.policy.headers(for: plan, end: end, route: route),
                pacing: context.pacing?.watched(by: activity), lane: TransportLane(owner: laneOwner, index: connection))
            configuration.logger.debug(
                "request sent",
                metadata: ["url": "\(route.url)", "range": "\(RequestPolicy.range(plan, end: end) ?? "none")"])
            activity.touch()
            let response: TransportResponse
            do {
                response = try await watched(activity) { [context] in try await context.transport.execute(request) }
            } catch let error as DownloadError where error.isRetryable {
                throw Retry(error: error, after: nil)
            }
            let head = ResumePlanner.ResponseHead(response)
            let meaning: RequestPolicy.Meaning
            do {
                meaning = try context.policy.meaning(
                    of: head, asked: plan, validators: context.validators, route: &route, now: Date())
            } catch {
                response.body.abandon()
                throw error
            }
            configuration.logger.debug(
                "segment decision",
                metadata: ["url": "\(route.url)", "status": "\(head.status)", "decision": "\(meaning)"])
            switch meaning {
            case .append, .skipOverlap(_, _):
                // Another complete length or validator was already a `.restart` of the planner's.
                var skip: Int64 = 0
                if case .skipOverlap(let overlap, _) = meaning { skip = overlap }
                return try await stream(
                    response.body, skip: skip, segment: segment, connection: connection, activity: activity)
            case .restartWithBody:
                // The body is handed to the transfer, which starts from zero with it: the first connection's such
                // response; the others' are dropped.
                // Not if this connection was cancelled (another ended the run) while its head arrived: the
                // cancellation then cancelled the request too.
                if Task.isCancelled || !board.offerRestart(response) { response.body.abandon() }
                throw Restart(reason: .rangeIgnored)
            case .restart(let reason):
                response.body.abandon()
                throw Restart(reason: reason)
            case .finish:
                response.body.abandon()
                throw Restart(reason: .unsatisfiable)
            case .askAgain:
                response.body.abandon()
            case .failure(let error, let after):
                response.body.abandon()
                if let after { board.holdRequests(for: after) }
                throw Retry(error: error, after: after)
            }
        }
    }

    private func stream(
        _ body: TransportBody, skip: Int64, segment: SegmentPlan.Segment, connection: Int, activity: ActivityClock
    ) async throws -> Int64 {
        defer { body.abandon() }
        let writer = SegmentWriter(
            fd: context.fd, path: context.path, log: context.log, board: board, connection: connection,
            segment: segment, skip: skip, chunkLimit: max(1, min(configuration.writeBufferSize, 1 << 20)),
            activity: activity)
        do {
            try await watched(activity) { try await body.drain(into: writer) }
        } catch let error as DownloadError where error.isRetryable {
            throw Retry(error: error, after: nil)
        }
        // A body that ended early after bringing bytes is not a failure (a server may cap a range's length): the
        // connection claims the rest again. One that brought nothing is.
        let end = board.withPlan { $0.end(of: connection) } ?? writer.position
        if writer.position < end, writer.position == segment.position {
            throw Retry(error: .prematureEndOfBody(received: writer.position, expected: end), after: nil)
        }
        return writer.position
    }

    private func watched<T: Sendable>(
        _ activity: ActivityClock, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let entry = Watchdog.Entry(
            activity: activity, idle: configuration.timeouts.idle, overall: configuration.timeouts.overall,
            started: context.started, lowSpeed: configuration.lowSpeed)
        return try await Watchdog.shared.run(entry, body)
    }

    // MARK: Digest

    /// Hashes the file from byte 0 as the done prefix grows, reading back what the connections wrote; returns once
    /// the whole length is hashed.
    private func hashDonePrefix() async throws -> Digest? {
        var hasher = SHA256()
        var hashed: Int64 = 0
        let total = board.snapshot.total
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while hashed < total {
            try Task.checkCancellation()
            let frontier = board.snapshot.contiguousEnd
            if frontier <= hashed {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            let want = Int(min(Int64(buffer.count), frontier - hashed))
            let count = try FileIO.read(
                context.fd, context.path, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: hashed)
            guard count > 0 else {
                throw DownloadError.fileSystem("\(context.path) is shorter than the bytes written to it")
            }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            hashed += Int64(count)
            await Task.yield()
        }
        return Digest(state: hasher)
    }

    /// A finished hash state handed from the hashing child task: a plain value with no shared storage.
    struct Digest: @unchecked Sendable {
        var state: SHA256
    }
}
