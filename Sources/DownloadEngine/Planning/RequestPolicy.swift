import Foundation

/// The rules every request of a download follows, single-stream or segmented, direct or through a proxy: the
/// header fields it carries, what its response means, and what to do after a failure.
///
/// Pure decisions over plain values. ``Transfer`` and ``SegmentedDownload`` only send, stream and count: both ask
/// this type for a request's fields, hand it each response head (whose bytes ``ResumePlanner`` judges) and each
/// failure (``Retries``). Both transport paths get the same fields: the proxy client reads its credentials from
/// them too (``ProxyWire/authorization(for:request:)``).
struct RequestPolicy: Sendable {
    /// The configuration's header fields, sent with every request (``DownloadConfiguration/headers``).
    var configurationHeaders: [(name: String, value: String)]
    /// The request's own fields (the task record's), which replace the configuration's of the same name.
    var requestHeaders: [(name: String, value: String)]
    /// Fields dropped once a route left the original origin (lower case).
    var sensitiveHeaders: Set<String>
    /// Whether to ask for the representation's digest (`Want-Repr-Digest`): only when it is checked.
    var asksForDigest: Bool
    /// Backoff and the retry budget.
    var retry: DownloadConfiguration.RetryPolicy
    /// The redirect hop limit.
    var maximumHops: Int
    /// The overall deadline of one download.
    var overall: Duration?
    /// Set after a digest mismatch: every later request asks the caches on its way not to answer from a stored
    /// response (`Cache-Control: no-cache`, and `Pragma: no-cache` for HTTP/1.0 caches), unless the user set those
    /// fields. A caching proxy that stored the bad bytes would otherwise serve them to every restart: squid with
    /// its shipped configuration revalidated, got a 304 from the origin and sent its stored copy again, three
    /// times.
    var bypassesCaches = false

    /// The policy of one task: `configuration`'s rules with the task's own header fields.
    init(_ configuration: DownloadConfiguration, requestHeaders: [(name: String, value: String)]) {
        configurationHeaders = configuration.headerList
        self.requestHeaders = requestHeaders
        sensitiveHeaders = configuration.redirects.sensitiveHeaders
        asksForDigest = configuration.verification.computesSHA256
        retry = configuration.retry
        maximumHops = configuration.redirects.maximumHops
        overall = configuration.timeouts.overall
    }

    // MARK: What a request carries

    /// The `Range` field of a request, if it has one.
    ///
    /// - Parameters:
    ///   - plan: What the request asks for.
    ///   - end: Where a segment's range ends (exclusive); `nil` runs to the end of the representation.
    static func range(_ plan: ResumePlanner.Request, end: Int64? = nil) -> String? {
        switch plan {
        case .full: nil
        case .resume(let offset, _): end.map { "bytes=\(offset)-\($0 - 1)" } ?? "bytes=\(offset)-"
        case .probe(let length): "bytes=0-\(length - 1)"
        }
    }

    /// Every header field of one request, in the order they are sent: identity encoding, the digest request, the
    /// range and its `If-Range`, a revalidation's condition, then the user's fields (see ``userHeaders(route:)``).
    ///
    /// - Parameters:
    ///   - plan: What the request asks for (``ResumePlanner/request(offset:validators:probe:)``, or a segment's
    ///     `.resume`).
    ///   - end: Where a segment's range ends (exclusive).
    ///   - revalidating: The validators of a completed download asked whether it changed (see ``Revalidation``).
    ///   - route: Where the request goes.
    func headers(
        for plan: ResumePlanner.Request, end: Int64? = nil, revalidating: ResumePlanner.Validators? = nil,
        route: Route
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Accept-Encoding", "identity")]
        // Asked on every segment too: a 200 to a segment's Range becomes the restart's body, and its digest must be
        // the one it is checked against.
        if asksForDigest { headers.append(("Want-Repr-Digest", "sha-256=1")) }
        if let range = Self.range(plan, end: end) { headers.append(("Range", range)) }
        if case .resume(_, let ifRange) = plan { headers.append(("If-Range", ifRange)) }
        if let validators = revalidating {
            headers += Revalidation.conditionalHeaders(etag: validators.etag, lastModified: validators.lastModified)
        }
        return headers + userHeaders(route: route)
    }

    /// The configuration's and the request's fields (see ``RequestHeaders/user``), without the sensitive ones once
    /// `route` left the origin; after a digest mismatch the fields that keep caches from answering
    /// (``bypassesCaches``) unless the user set them.
    func userHeaders(route: Route) -> [(name: String, value: String)] {
        var headers = RequestHeaders.user(
            configuration: configurationHeaders, request: requestHeaders, sensitive: sensitiveHeaders,
            crossOrigin: route.crossOrigin)
        if bypassesCaches {
            for name in ["Cache-Control", "Pragma"]
            where !headers.contains(where: { $0.name.lowercased() == name.lowercased() }) {
                headers.append((name, "no-cache"))
            }
        }
        return headers
    }

    // MARK: What a response means

    /// What a response means to the loop that asked.
    enum Meaning: Hashable, Sendable {
        /// The body continues the bytes held (``ResumePlanner/Decision/append(total:)``).
        case append(total: Int64?)
        /// The body continues them after `overlap` bytes already held.
        case skipOverlap(Int64, total: Int64?)
        /// A 200: the whole representation; what is held is replaced by this body.
        case restartWithBody(total: Int64?)
        /// The bytes held cannot be completed: empty them and ask again from zero.
        case restart(ResumePlanner.RestartReason)
        /// A 416 to a partial file that already holds the whole representation.
        case finish
        /// Ask again where the route now points: a redirect followed (its hop), or a resolved URL given up
        /// (`nil`: the route starts again from its original URL).
        case askAgain(RedirectHop?)
        /// A failure to hand to ``Retries``: a retryable status with the server's `Retry-After`, or a response
        /// refused while the bytes held are kept.
        case failure(DownloadError, retryAfter: Duration?)
    }

    /// What `head`, the answer to a request for `plan` at `route`, means, following a redirect or giving up a
    /// resolved URL on the way (`route` is updated).
    ///
    /// - Throws: The planner's ``ResumePlanner/Decision/fail(_:)`` errors, and a redirect's
    ///   (``Route/follow(_:status:maximumHops:)``).
    func meaning(
        of head: ResumePlanner.ResponseHead, asked plan: ResumePlanner.Request,
        validators: ResumePlanner.Validators, route: inout Route, now: Date
    ) throws -> Meaning {
        let decision = ResumePlanner.decide(
            head, request: plan, validators: validators, url: route.url, usingResolvedURL: route.usesResolvedURL,
            now: now)
        switch decision {
        case .append(let total): return .append(total: total)
        case .skipOverlap(let overlap, let total): return .skipOverlap(overlap, total: total)
        case .restartWithBody(let total): return .restartWithBody(total: total)
        case .restart(let reason): return .restart(reason)
        case .finish: return .finish
        case .redirect(let location):
            return .askAgain(try route.follow(location, status: head.status, maximumHops: maximumHops))
        case .reresolve:
            route.restart()
            return .askAgain(nil)
        case .retry(let after):
            return .failure(.retryableHTTPStatus(head.status, url: route.url), retryAfter: after)
        case .refuse(let error):
            return .failure(error, retryAfter: nil)
        case .fail(let error):
            throw error
        }
    }

    // MARK: Time

    /// The error that ends a download `elapsed` after it started when waiting `delay` more would pass the overall
    /// deadline; `nil` while there is time.
    func deadlineError(elapsed: Duration, waiting delay: Duration = .zero) -> DownloadError? {
        guard let overall, elapsed + delay > overall else { return nil }
        return .deadlineExceeded(overall.seconds)
    }
}
