/// The speed and time left a transfer reports: an exponential moving average of the byte rate between reports,
/// reported at most every ``interval`` unless a report is forced.
struct ProgressMeter: Sendable {
    /// The least time between two reports that are not forced.
    let interval: Duration
    private var lastAt = ContinuousClock.now
    private var lastBytes: Int64 = 0
    private var speed: Double = 0

    init(interval: Duration) { self.interval = interval }

    /// Starts counting from `bytes` (the partial file's length after it was opened or emptied).
    mutating func restart(at bytes: Int64) { lastBytes = bytes }

    /// The progress at `bytes` of `total`, or `nil` when the last report is more recent than ``interval`` and
    /// `force` is not set.
    mutating func reading(
        bytes: Int64, total: Int64?, force: Bool, now: ContinuousClock.Instant = .now
    ) -> DownloadProgress? {
        let elapsed = (now - lastAt).seconds
        guard force || elapsed >= interval.seconds else { return nil }
        // Below 50 ms the rate of one step says more about the timer than about the link.
        if elapsed > 0.05 {
            let instant = Double(bytes - lastBytes) / elapsed
            speed = speed == 0 ? instant : 0.7 * speed + 0.3 * instant
            lastAt = now
            lastBytes = bytes
        }
        let eta = total.flatMap { speed > 0 ? Double(max(0, $0 - bytes)) / speed : nil }
        return .init(bytes: bytes, total: total, bytesPerSecond: speed, eta: eta)
    }
}
