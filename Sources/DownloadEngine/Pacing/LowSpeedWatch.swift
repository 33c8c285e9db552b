/// Whether an attempt is slower than a ``DownloadConfiguration/LowSpeedLimit`` over its whole window: the pure
/// decision behind the low-speed abort, fed the byte count and the time by the ``Watchdog``.
///
/// An attempt is too slow when, over the last `window`, it brought fewer than `bytesPerSecond × window` bytes (as
/// curl's `--speed-limit`/`--speed-time`): the average over the window, so a burst and a pause inside it even out,
/// and an attempt younger than the window is never too slow. The time waiting for the response head counts, as
/// bytes not arriving. The watch keeps the samples of one window (one per watchdog tick).
struct LowSpeedWatch: Sendable {
    /// The slowest average accepted, in bytes per second.
    let bytesPerSecond: Int64
    /// How long the average must stay below it.
    let window: Duration
    /// Byte counts over the last window, oldest first; the first is the baseline.
    private var samples: [(at: ContinuousClock.Instant, bytes: Int64)]

    /// A watch starting at `now` with the attempt's byte count then.
    init(bytesPerSecond: Int64, window: Duration, bytes: Int64, now: ContinuousClock.Instant) {
        self.bytesPerSecond = bytesPerSecond
        self.window = window
        samples = [(now, bytes)]
    }

    /// Records the attempt's byte count at `now`.
    ///
    /// - Returns: Whether the attempt brought less than the limit over the whole last window.
    mutating func observe(bytes: Int64, at now: ContinuousClock.Instant) -> Bool {
        // Fewer bytes than before: the count started again (a restart from zero); so does the window.
        if let last = samples.last, bytes < last.bytes || now < last.at { samples = [] }
        samples.append((now, bytes))
        // The baseline is the newest sample at least a window old; older ones are not needed any more.
        while samples.count >= 2, now - samples[1].at >= window { samples.removeFirst() }
        let base = samples[0]
        let elapsed = now - base.at
        guard elapsed >= window else { return false }
        return Double(bytes - base.bytes) < Double(bytesPerSecond) * elapsed.seconds
    }
}
