/// The retry rules of one request loop: a single-stream transfer's, or one connection's of a segmented download.
/// A value the loop keeps and hands every failure; it counts and decides, the loop waits and asks again.
///
/// - Failures in a row without progress are counted against ``DownloadConfiguration/RetryPolicy/maximumRetries``;
///   an attempt that stored new bytes starts the count again. The delay is the policy's backoff, or the server's
///   `Retry-After`.
/// - A slow attempt aborted by the low-speed limit resumes at once and is not counted here: the slow aborts have a
///   limit of their own (``DownloadConfiguration/LowSpeedLimit/maximumAborts``).
/// - Three malformed responses in a row that brought no byte: a server that always answers this way; the download
///   fails.
/// - A segment connection refused with 503 or 429 while others work (a per-client connection cap) leaves, so the
///   download goes on with fewer connections; one out of retries leaves too. The last connection hands its failure
///   to the transfer, whose own retries take over.
struct Retries: Sendable {
    /// How a loop shares its download.
    enum Sharing: Hashable, Sendable {
        /// A single-stream transfer.
        case alone
        /// A segment connection while others still work.
        case withOthers
        /// The only segment connection still working.
        case last
    }

    /// What the loop does next.
    enum Step: Hashable, Sendable {
        /// Ask again at once: a slow attempt aborted.
        case resumeNow
        /// Ask again after the delay.
        case retry(after: Duration)
        /// Give the work back and end this connection; the others go on.
        case leave
        /// End the segmented run with the failure, for the transfer's own retries.
        case handUp
        /// The download fails with this error.
        case giveUp(DownloadError)
    }

    /// Failures in a row without progress.
    private(set) var failures = 0
    private var malformedInARow = 0

    /// An attempt that ended without a failure.
    mutating func succeeded(progressed: Bool) {
        if progressed { failures = 0 }
        malformedInARow = 0
    }

    /// What to do after a failed attempt.
    ///
    /// - Parameters:
    ///   - error: Why it failed (a retryable error).
    ///   - retryAfter: The server's `Retry-After`, if any.
    ///   - progressed: Whether the attempt stored new bytes before it failed.
    ///   - sharing: How the loop shares its download.
    ///   - policy: The retry budget and backoff.
    ///   - random: A number in `0..<1` for the jitter.
    mutating func step(
        after error: DownloadError, retryAfter: Duration?, progressed: Bool, sharing: Sharing,
        policy: DownloadConfiguration.RetryPolicy, random: Double
    ) -> Step {
        if progressed { failures = 0 }
        if DownloadError.slowTransfer ~= error {
            malformedInARow = 0
            return .resumeNow
        }
        if sharing == .last { return .handUp }
        if DownloadError.malformedResponse ~= error, !progressed {
            malformedInARow += 1
            if malformedInARow >= 3 {
                return .giveUp(.unexpectedResponse("\(error.message) (3 times in a row)"))
            }
        } else {
            malformedInARow = 0
        }
        if sharing == .withOthers, error.status == 503 || error.status == 429 { return .leave }
        failures += 1
        if DownloadError.unprocessed ~= error {
            // Never processed (RFC 9113 §8.7): safe to send again at once, within the same budget.
            if failures <= policy.maximumRetries { return .retry(after: .zero) }
            return .giveUp(policy.maximumRetries == 0 ? error : .retriesExhausted(failures - 1, last: error))
        }
        if let delay = policy.delay(forRetry: failures, retryAfter: retryAfter, random: random) {
            return .retry(after: delay)
        }
        if sharing == .withOthers { return .leave }
        return .giveUp(policy.maximumRetries == 0 ? error : .retriesExhausted(failures - 1, last: error))
    }
}
