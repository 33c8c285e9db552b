/// The pure rules of revalidating a completed download (``DownloadRequest/revalidates``, `rangefetch -N`): what the
/// request asks, and what its answer means.
///
/// The request carries `If-None-Match` with the recorded `ETag` (weak ones too: RFC 9110 §13.1.2 compares them
/// weakly), else `If-Modified-Since` with the recorded `Last-Modified`, never both: a server must ignore
/// `If-Modified-Since` when `If-None-Match` is present (RFC 9110 §13.1.3), and one validator keeps the decision
/// plain. Without a recorded validator nothing is conditional and the download is fetched again.
enum Revalidation {
    /// What a revalidation's response says.
    enum Answer: Hashable, Sendable {
        /// 304: the destination is current; keep it.
        case notModified
        /// Anything else: the response is handled as any download's (a 200 or 206 is the new representation, which
        /// replaces the destination once complete and verified; a redirect is followed; a 5xx retried).
        case handleAsDownload
    }

    /// The conditional header fields of a revalidation request.
    ///
    /// - Parameters:
    ///   - etag: The recorded `ETag`, as received.
    ///   - lastModified: The recorded `Last-Modified`, as received.
    /// - Returns: `If-None-Match`, else `If-Modified-Since`, else nothing.
    static func conditionalHeaders(etag: String?, lastModified: String?) -> [(name: String, value: String)] {
        if let etag, !etag.isEmpty { return [("If-None-Match", etag)] }
        if let lastModified, !lastModified.isEmpty { return [("If-Modified-Since", lastModified)] }
        return []
    }

    /// What a response to a revalidation request means.
    ///
    /// - Parameters:
    ///   - status: The response's status.
    ///   - conditional: Whether the request carried a validator (a 304 to an unconditional request proves
    ///     nothing and is handled as any download's).
    /// - Returns: The answer.
    static func answer(status: Int, conditional: Bool) -> Answer {
        conditional && status == 304 ? .notModified : .handleAsDownload
    }
}
