import Foundation
import HTTPVocabulary

extension Transfer {
    /// What the first request of a download that may be segmented asks for: small, because the other connections
    /// start only once its head is in, and nothing else runs while it does.
    static let firstSegmentLength: Int64 = 64 << 10

    /// One attempt: the segments of a segmented download, the body a segment's 200 left, or one request whose
    /// response is decided on and streamed.
    func attempt() async throws -> AttemptResult {
        if let response = restartBody {
            restartBody = nil
            do {
                return try await withWatchdog { [self] in try await handle(response, plan: .full) }
            } catch is CancellationError where !Task.isCancelled {
                // Its request was cancelled with its connection after all; this task was not: ask again.
                return .again
            }
        }
        if record.segments != nil { return try await runSegments(first: nil) }
        // A revalidation asks for the whole representation: bytes a partial file may hold are not of the new one.
        if revalidating, length > 0 { try truncate() }
        let probe = configuration.connectionsPerFile > 1 && !segmentsDisabled ? Self.firstSegmentLength : nil
        let plan = ResumePlanner.request(offset: length, validators: record.validators, probe: probe)
        if case .full = plan, length > 0 { try truncate() }
        let headers = policy.headers(
            for: plan, revalidating: revalidating ? record.validators : nil, route: route)
        let request = TransportRequest(url: route.url, headers: headers, pacing: pacing?.watched(by: activity))
        configuration.logger.debug(
            "request sent", metadata: ["url": "\(route.url)", "range": "\(RequestPolicy.range(plan) ?? "none")"])
        activity.touch()
        return try await withWatchdog { [self] in
            let response = try await transport.execute(request)
            activity.touch()
            return try await handle(response, plan: plan)
        }
    }

    /// Decides on a response (``RequestPolicy/meaning(of:asked:validators:route:now:)``) and carries the decision
    /// out: follows a redirect, writes the body, or turns into segments.
    func handle(_ response: TransportResponse, plan: ResumePlanner.Request) async throws -> AttemptResult {
        let head = ResumePlanner.ResponseHead(response)
        if let digest = response.header("repr-digest").flatMap(HeaderValues.sha256FromReprDigest),
            (200...299).contains(response.status)
        {
            reprDigest = digest
        }
        // A body the decision does not stream must not hold the connection; after a drain this does nothing.
        defer { response.body.abandon() }
        configuration.logger.debug("response", metadata: ["url": "\(route.url)", "status": "\(response.status)"])
        if case .probe = plan, response.status == 416 {
            // An empty representation (or a server refusing ranges this way): fetch it whole over one connection.
            segmentsDisabled = true
            return .again
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
        let meaning = try policy.meaning(
            of: head, asked: plan, validators: record.validators, route: &route, now: Date())
        configuration.logger.debug("resume decision", metadata: ["url": "\(route.url)", "decision": "\(meaning)"])
        switch meaning {
        case .askAgain(let hop):
            guard let hop else {
                record.resolvedURL = nil
                return .again
            }
            if route.hops == 1 { record.redirects = [] }
            record.redirects.append(hop)
            record.resolvedURL = hop.to
            // Not saved here: the hops reach the disk with the validators, before the first byte is written.
            // Killed before that, the next run simply follows the redirects again.
            await report(.redirected(hop, record))
            return .again
        case .failure(let error, let retryAfter):
            return .failed(error, retryAfter: retryAfter)
        case .restart(let reason):
            return .restart(reason)
        case .finish:
            return .done
        case .restartWithBody(let total):
            return try await writeWhole(response, head: head, total: total)
        case .append(let total):
            return try await append(response, head: head, plan: plan, skip: 0, total: total)
        case .skipOverlap(let overlap, let total):
            return try await append(response, head: head, plan: plan, skip: overlap, total: total)
        }
    }

    /// A 200: the whole representation, written over whatever the partial file held (or fetched in segments).
    private func writeWhole(
        _ response: TransportResponse, head: ResumePlanner.ResponseHead, total: Int64?
    ) async throws -> AttemptResult {
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
            return try await runSegments(first: .init(body: response.body, position: 0, end: nil, url: route.url))
        }
        // A new task whose whole small body is already in memory is written without a log line before it: killed
        // before its completed line, it leaves a partial file that no record claims, which the next run deletes as
        // an orphan and fetches again (at most ``unrecordedLimit`` bytes, the trade already made for a kill between
        // the completed line and the rename); the line would cost a JSON encoding and a write per file.
        let inMemory = neverLogged && (total ?? .max) <= Self.unrecordedLimit && response.body.isComplete()
        let owed = try saveBeforeWriting(changed: !inMemory)
        let end = try await stream(response.body, skip: 0, expectedEnd: total, owed: owed)
        return total.map { end >= $0 } ?? true ? .done : .again
    }

    /// A 206: the body continues the partial file (after `skip` bytes it already holds), or becomes the first of
    /// the segments.
    private func append(
        _ response: TransportResponse, head: ResumePlanner.ResponseHead, plan: ResumePlanner.Request, skip: Int64,
        total: Int64?
    ) async throws -> AttemptResult {
        // A resume of a partial file whose task never chose a name (written by a run without one) names it now.
        let named = record.chooseName(contentDisposition: response.header("content-disposition"), store: store)
        if named { await report(.named(record)) }
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
            return try await runSegments(first: .init(body: response.body, position: length, end: end, url: route.url))
        }
        let owed = try saveBeforeWriting(changed: changed)
        let end = try await stream(response.body, skip: skip, expectedEnd: rangeEnd, owed: owed)
        if let total = validators.totalLength, end >= total { return .done }
        return .again
    }
}
