extension DownloadConfiguration {
    /// The low-speed abort (curl's `--speed-limit`/`--speed-time`, aria2c's `--lowest-speed-limit`): an attempt that
    /// brings fewer than ``bytesPerSecond`` on average over ``duration`` is aborted and resumed where it stood.
    ///
    /// The resume is a new request from the bytes kept (`Range` from the partial file's length, `If-Range` with the
    /// validator, as every resume), made at once, without the retry policy's backoff. Slow aborts are counted apart
    /// from ``RetryPolicy/maximumRetries`` (which counts failures without progress, and a slow attempt may well
    /// have made some): a download fails with ``DownloadError/tooSlow(aborts:bytesPerSecond:seconds:)`` at the
    /// slow abort after ``maximumAborts``, in one run of the task, segments included.
    ///
    /// Per attempt, that is per connection: with ``connectionsPerFile`` above 1, each segment's request is held to
    /// the limit on its own. A slow segment is aborted and its remaining range given back; a connection left
    /// without work waits for such a range, rather than leaving, while any segment still runs (see
    /// docs/engine.md, "Low-speed abort"). A bandwidth limit below the low-speed limit makes every attempt slow.
    public struct LowSpeedLimit: Sendable, Hashable {
        /// The slowest average accepted, in bytes per second (above 0).
        public var bytesPerSecond: Int64
        /// How long an attempt may stay below it (above 0).
        public var duration: Duration
        /// How many slow attempts a download may abort and resume before it fails; 0 fails at the first. Default 5.
        public var maximumAborts: Int

        /// Creates a limit.
        ///
        /// - Parameters:
        ///   - bytesPerSecond: The slowest average accepted.
        ///   - duration: How long an attempt may stay below it.
        ///   - maximumAborts: Slow attempts aborted and resumed before the download fails.
        public init(bytesPerSecond: Int64, duration: Duration, maximumAborts: Int = 5) {
            self.bytesPerSecond = bytesPerSecond
            self.duration = duration
            self.maximumAborts = maximumAborts
        }

        /// What makes the limit unusable, if anything: a rate or a duration not above 0, a negative count.
        var problem: String? {
            if bytesPerSecond <= 0 { return "bytesPerSecond must be above 0, got \(bytesPerSecond)" }
            if duration <= .zero { return "duration must be above 0, got \(duration)" }
            if maximumAborts < 0 { return "maximumAborts must not be negative, got \(maximumAborts)" }
            return nil
        }

        /// A watch of one attempt from `now`, whose byte count is `bytes` then.
        func watch(bytes: Int64, now: ContinuousClock.Instant) -> LowSpeedWatch {
            LowSpeedWatch(bytesPerSecond: bytesPerSecond, window: duration, bytes: bytes, now: now)
        }

        /// The error of an attempt aborted for being slow.
        var abort: DownloadError { .slowTransfer(bytesPerSecond: bytesPerSecond, seconds: duration.seconds) }
    }
}
