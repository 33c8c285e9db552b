import Foundation
import HTTPVocabulary

/// The pure heart of the engine: what to send, and what to do with the response head.
///
/// No I/O here. The transfer loop asks ``request(offset:validators:)`` for the range and `If-Range` to send,
/// then hands the response head to ``decide(_:)`` and carries out the decision.
enum ResumePlanner {
    /// What the engine remembers about the representation being downloaded.
    struct Validators: Hashable, Sendable {
        /// The `ETag` from the response the partial file's bytes came from, as received.
        var etag: String?
        /// The `Last-Modified` from that response, as received.
        var lastModified: String?
        /// The complete length, when known.
        var totalLength: Int64?
        /// The `Content-Type` of that response, as received: a resume answered with an HTML page where another type
        /// was being downloaded is a login or error page, not the file (see ``isPageInPlaceOfFile(_:recorded:)``).
        var contentType: String?

        /// The `If-Range` value: the strong ETag, else the Last-Modified date, else `nil`. Never a weak ETag.
        var ifRange: String? {
            if let etag, EntityTag.isStrong(etag) { return etag }
            return lastModified
        }
    }

    /// The request the engine sends.
    enum Request: Hashable, Sendable {
        /// `GET` without `Range`: start from zero (no partial bytes, or no validator to resume them safely).
        case full
        /// `GET` with `Range: bytes=offset-` and `If-Range: ifRange`.
        case resume(offset: Int64, ifRange: String)
        /// `GET` with `Range: bytes=0-(length-1)` and no `If-Range`: a fresh download to be fetched in segments
        /// asks for its first segment only, so no response runs on past it while the others fetch the rest (a
        /// server that ignores Range answers 200 with everything, and the download goes on over one connection).
        case probe(length: Int64)

        /// The offset the request asks from.
        var offset: Int64 {
            if case .resume(let offset, _) = self { return offset }
            return 0
        }
    }

    /// Chooses the request for a partial file of `offset` bytes (its actual length on disk).
    ///
    /// - Parameters:
    ///   - offset: The partial file's length.
    ///   - validators: What was recorded about the representation.
    ///   - probe: The first segment's length when the download may be fetched in segments.
    /// - Returns: `.resume` when there are bytes to keep and a usable validator; `.probe` for a fresh download that
    ///   may be segmented; else `.full`.
    static func request(offset: Int64, validators: Validators, probe: Int64? = nil) -> Request {
        if offset == 0, let probe, probe > 0 { return .probe(length: probe) }
        guard offset > 0, let ifRange = validators.ifRange else { return .full }
        return .resume(offset: offset, ifRange: ifRange)
    }

    /// The parts of a response head the planner reads.
    struct ResponseHead: Hashable, Sendable {
        /// The status code.
        var status: Int
        /// `Content-Range`, raw.
        var contentRange: String?
        /// `Content-Length`, raw.
        var contentLength: String?
        /// `ETag`, raw.
        var etag: String?
        /// `Last-Modified`, raw.
        var lastModified: String?
        /// `Retry-After`, raw.
        var retryAfter: String?
        /// `Location`, raw.
        var location: String?
        /// `Content-Encoding`, raw.
        var contentEncoding: String?
        /// `Content-Type`, raw.
        var contentType: String?

        init(
            status: Int, contentRange: String? = nil, contentLength: String? = nil, etag: String? = nil,
            lastModified: String? = nil, retryAfter: String? = nil, location: String? = nil,
            contentEncoding: String? = nil, contentType: String? = nil
        ) {
            self.status = status
            self.contentRange = contentRange
            self.contentLength = contentLength
            self.etag = etag
            self.lastModified = lastModified
            self.retryAfter = retryAfter
            self.location = location
            self.contentEncoding = contentEncoding
            self.contentType = contentType
        }
    }

    /// Why a response's bytes cannot extend the partial file.
    enum RestartReason: String, Hashable, Sendable {
        case validatorChanged = "validator changed"
        case lengthChanged = "complete length changed"
        case rangeStartsLate = "range starts after the partial file's end"
        case malformedContentRange = "malformed Content-Range"
        case unsatisfiable = "416 but the partial file is not complete"
        case preconditionFailed = "unexpected 304/412"
        case digestMismatch = "the bytes received disagree with the server's Repr-Digest"
        case rangeIgnored = "200 to a segment's Range"
    }

    /// What to do with a response.
    enum Decision: Hashable, Sendable {
        /// 206 starting exactly at the offset: append the body. `total` is the complete length, if sent.
        case append(total: Int64?)
        /// 206 starting `overlap` bytes before the offset: drop that many body bytes, then append.
        case skipOverlap(Int64, total: Int64?)
        /// 200: truncate the partial file to zero and write this body from the start (the request is not wasted).
        case restartWithBody(total: Int64?)
        /// Discard this response, truncate the partial file and request again from zero.
        case restart(RestartReason)
        /// 416 and the partial file already holds the complete representation: verify and finish.
        case finish
        /// Follow the redirect to `location` (not yet resolved against the request URL).
        case redirect(location: String)
        /// The resolved URL stopped working (401, 403, 404, 410): resolve again from the original URL and resume.
        case reresolve
        /// Retry from the current offset, after the server's `Retry-After` when it sent one.
        case retry(after: Duration?)
        /// Discard this response and keep the partial file: ask again from the current offset, spending a retry, and
        /// end with this error when the retries run out (an HTML page where the file was being resumed).
        case refuse(DownloadError)
        /// Give up on the task.
        case fail(DownloadError)
    }

    /// Decides what to do with a response head.
    ///
    /// - Parameters:
    ///   - head: The response head.
    ///   - request: The request that was sent.
    ///   - validators: What was recorded about the representation.
    ///   - url: The URL requested (for messages).
    ///   - usingResolvedURL: Whether `url` came from an earlier redirect, not from the task's original URL.
    ///   - now: The current time, for `Retry-After` dates.
    /// - Returns: The decision.
    static func decide(
        _ head: ResponseHead,
        request: Request,
        validators: Validators,
        url: String,
        usingResolvedURL: Bool,
        now: Date
    ) -> Decision {
        let offset = request.offset
        // The engine asks for identity. Encoded bytes are not the file, and a range of them cannot extend a partial
        // file of identity bytes: such a body is never written (the partial file stays as it was).
        if head.status == 200 || head.status == 206, let coding = head.contentEncoding, !isIdentity(coding) {
            return .fail(
                .unexpectedResponse(
                    "HTTP \(head.status) from \(url) is encoded (Content-Encoding: \(coding)) though identity was asked for;"
                        + " encoded bytes are not saved as the file"))
        }
        switch head.status {
        case 200:
            // A 200 replaces what was kept, as HTTP has it, except an HTML page in place of a file of another type:
            // a login, captive-portal or error page sent with 200 (aria2/aria2#1828). Writing it over the partial file
            // would end the download with the page as the file.
            if request != .full, isPageInPlaceOfFile(head.contentType, recorded: validators.contentType) {
                return .refuse(
                    .unexpectedResponse(
                        "HTTP 200 from \(url) is an HTML page (Content-Type: \(head.contentType ?? "")) where"
                            + " \(validators.contentType ?? "") was being downloaded; the partial file is kept"))
            }
            return .restartWithBody(total: head.contentLength.flatMap { HeaderValues.digits($0) })
        case 206:
            guard let raw = head.contentRange, let range = ContentRange(parsing: raw), let first = range.first,
                let last = range.last
            else { return .restart(.malformedContentRange) }
            // Only for a Range with If-Range: a 206 to a request without one cannot contradict what is recorded. A
            // segment's range may start at 0 and still carry If-Range.
            let ranged = if case .resume = request { true } else { false }
            if let recorded = validators.totalLength, let complete = range.complete, recorded != complete, ranged {
                return .restart(.lengthChanged)
            }
            if ranged, let recorded = validators.etag, let sent = head.etag, sent != recorded {
                return .restart(.validatorChanged)
            }
            if ranged, validators.etag == nil, let recorded = validators.lastModified, let sent = head.lastModified,
                sent != recorded
            {
                return .restart(.validatorChanged)
            }
            if first > offset { return .restart(.rangeStartsLate) }
            if first == offset { return .append(total: range.complete) }
            // A truthful earlier start: the overlap is skipped, provided the range reaches past the offset.
            guard last >= offset else { return .restart(.rangeStartsLate) }
            return .skipOverlap(offset - first, total: range.complete)
        case 416:
            guard let raw = head.contentRange, let range = ContentRange(parsing: raw), range.first == nil,
                let complete = range.complete
            else { return .restart(.unsatisfiable) }
            if offset > 0, offset == complete, validators.totalLength.map({ $0 == complete }) ?? true {
                return .finish
            }
            return .restart(.unsatisfiable)
        case 301, 302, 303, 307, 308:
            guard let location = head.location, !location.isEmpty else {
                return .fail(.redirectWithoutLocation(head.status, url: url))
            }
            return .redirect(location: location)
        case 304, 412:
            return .restart(.preconditionFailed)
        case 401, 403, 404, 410:
            return usingResolvedURL ? .reresolve : .fail(.permanentHTTPStatus(head.status, url: url))
        case let status where ResumePolicy.isRetryable(status):
            return .retry(after: head.retryAfter.flatMap { HeaderValues.retryAfter($0, now: now) })
        case let status where (200..<300).contains(status):
            return .fail(.unexpectedResponse("HTTP \(status) from \(url)"))
        default:
            return .fail(.permanentHTTPStatus(head.status, url: url))
        }
    }
}

extension ResumePlanner {
    /// Whether the rest of a download may be fetched in segments after `head`: a 206 (range support proved) or a
    /// 200 announcing `Accept-Ranges: bytes`, a strong `ETag` (the `If-Range` every segment carries must reject any
    /// other version), and a known length with at least two `minimumSegment` left past the `held` bytes.
    static func allowsSegments(
        _ head: ResponseHead, total: Int64?, held: Int64, minimumSegment: Int64, acceptRanges: String?
    ) -> Bool {
        guard let total, total - held >= 2 * minimumSegment, let etag = head.etag, EntityTag.isStrong(etag) else {
            return false
        }
        if head.status == 206 { return true }
        return acceptRanges?.lowercased().split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces) == "bytes"
        } ?? false
    }

    /// The absolute URL a redirect's `Location` points to from `url`.
    ///
    /// - Throws: ``DownloadError/redirectWithoutLocation(_:url:)`` when it does not resolve to a URL with a host,
    ///   ``DownloadError/unsupportedScheme(_:)`` for anything but `http` and `https`.
    static func redirectTarget(_ location: String, from url: String, status: Int) throws -> String {
        guard let base = URL(string: url), let target = URL(string: location, relativeTo: base)?.absoluteURL,
            let host = target.host, !host.isEmpty
        else { throw DownloadError.redirectWithoutLocation(status, url: url) }
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw DownloadError.unsupportedScheme(target.absoluteString)
        }
        return target.absoluteString
    }
}

extension ResumePlanner {
    /// Whether `contentType` names an HTML page while `recorded`, the type the partial file's bytes came with, names
    /// something else: the page is then not a new version of the file. Media types compare by their essence
    /// (type/subtype, case-insensitive, parameters left out); without a recorded type nothing is refused.
    static func isPageInPlaceOfFile(_ contentType: String?, recorded: String?) -> Bool {
        guard let page = contentType.map(mediaTypeEssence), let file = recorded.map(mediaTypeEssence), !file.isEmpty
        else { return false }
        let html: Set<String> = ["text/html", "application/xhtml+xml"]
        return html.contains(page) && !html.contains(file)
    }

    /// `text/html; charset=utf-8` → `text/html`.
    private static func mediaTypeEssence(_ value: String) -> String {
        (value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
            .lowercased()
    }
}

/// Whether a `Content-Encoding` value leaves the bytes as they are: empty, or only `identity` codings.
private func isIdentity(_ contentEncoding: String) -> Bool {
    contentEncoding.split(separator: ",").allSatisfy {
        let coding = $0.trimmingCharacters(in: .whitespaces)
        return coding.isEmpty || coding.lowercased() == "identity"
    }
}

private enum ResumePolicy {
    static func isRetryable(_ status: Int) -> Bool { DownloadConfiguration.RetryPolicy.isRetryable(status: status) }
}
