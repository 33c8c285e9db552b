import Foundation

/// Where a download's requests go: the task's original URL, the URL its redirects led to, how many hops that took,
/// and whether any hop left the original origin (after which the credentials are not sent, see
/// ``RequestPolicy/headers(for:end:revalidating:route:)``).
///
/// A value each request loop keeps, the single-stream transfer's and each segment connection's, so both count
/// hops, cap them and forget a resolved URL by the same rules. Pure: no I/O.
struct Route: Hashable, Sendable {
    /// The task's URL, where every redirect chain starts.
    let original: String
    /// The URL the next request goes to.
    private(set) var url: String
    /// Hops followed since the route last started from ``original``.
    private(set) var hops = 0
    /// Whether a hop changed origin (scheme, host or port) since then, or the route started off the original's
    /// origin. Sticky: a chain that left the origin and came back still does not get the credentials again.
    private(set) var crossOrigin: Bool
    /// What ``crossOrigin`` starts as after ``restart()``: a segment connection inherits its transfer's.
    private let inheritedCrossOrigin: Bool

    /// A route from `original`, at `url` (a resolved URL from an earlier run or connection) when given.
    ///
    /// - Parameter crossOrigin: Whether the requests of this route count as cross-origin from the start (a
    ///   segment connection of a transfer whose own redirects changed origin).
    init(original: String, at url: String? = nil, crossOrigin: Bool = false) {
        self.original = original
        self.url = url ?? original
        self.inheritedCrossOrigin = crossOrigin
        self.crossOrigin = crossOrigin || !Self.sameOrigin(url ?? original, original)
    }

    /// Whether the next request goes to a URL an earlier redirect led to, not the original.
    var usesResolvedURL: Bool { url != original }

    /// Follows a redirect from ``url``.
    ///
    /// - Returns: The hop, for the record and the events.
    /// - Throws: ``DownloadError/tooManyRedirects(_:url:)`` past `maximumHops`; the errors of
    ///   ``ResumePlanner/redirectTarget(_:from:status:)`` for a `Location` that is no usable URL.
    mutating func follow(_ location: String, status: Int, maximumHops: Int) throws -> RedirectHop {
        hops += 1
        if hops > maximumHops { throw DownloadError.tooManyRedirects(maximumHops, url: original) }
        let target = try ResumePlanner.redirectTarget(location, from: url, status: status)
        let hop = RedirectHop(from: url, to: target, status: status)
        if !Self.sameOrigin(target, url) { crossOrigin = true }
        url = target
        return hop
    }

    /// Starts again from ``original``: the resolved URL stopped answering (401, 403, 404, 410) or cannot be
    /// connected to.
    mutating func restart() {
        url = original
        hops = 0
        crossOrigin = inheritedCrossOrigin
    }

    /// After a failed attempt: a redirect target that cannot be connected to is an edge that is down, so the retry
    /// asks the original URL again, which may send the client to an edge that works. Counted as a failure like any
    /// retry, so an origin that keeps redirecting to dead edges still runs out of retries.
    ///
    /// - Returns: Whether the route started again from ``original``.
    mutating func forgetUnreachable(after error: DownloadError) -> Bool {
        guard error.isConnectFailure, usesResolvedURL else { return false }
        restart()
        return true
    }

    static func sameOrigin(_ a: String, _ b: String) -> Bool {
        guard let ua = URL(string: a), let ub = URL(string: b) else { return false }
        return HeaderValues.sameOrigin(ua, ub)
    }
}
