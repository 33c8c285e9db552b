/// A token bucket over bytes: the pure arithmetic behind a bandwidth limit, fed the time by its caller.
///
/// The bucket fills at `rate` bytes per second up to `capacity` (the burst allowed after a quiet spell). Bytes are
/// charged after they were read, as a network read cannot be sized in advance: a read larger than the tokens left
/// puts the bucket into debt, and ``take(_:at:)`` answers how long the reader must wait before its next read so that
/// the debt is paid. Whatever the read sizes, the bytes read by the time of any read never exceed
/// `capacity + rate × elapsed` plus the reads that were already under way: the limit bounds the average over every
/// window, not each read.
struct TokenBucket: Sendable, Hashable {
    /// Bytes per second.
    let rate: Double
    /// The most tokens the bucket holds.
    let capacity: Double
    /// Tokens available now; negative while in debt.
    private(set) var tokens: Double
    /// When ``tokens`` was last brought up to date.
    private(set) var updated: ContinuousClock.Instant

    /// The burst a limit allows by default: a tenth of a second of traffic (at least one byte), so that a reader
    /// starts at once and a long pause never turns into a long burst above the rate.
    static func defaultCapacity(forRate rate: Int64) -> Int64 { max(1, rate / 10) }

    /// A full bucket.
    ///
    /// - Parameters:
    ///   - bytesPerSecond: The rate, above 0.
    ///   - capacity: The burst; default ``defaultCapacity(forRate:)``.
    ///   - now: The time the bucket starts at.
    init(bytesPerSecond: Int64, capacity: Int64? = nil, now: ContinuousClock.Instant) {
        rate = Double(max(1, bytesPerSecond))
        self.capacity = Double(max(1, capacity ?? Self.defaultCapacity(forRate: bytesPerSecond)))
        tokens = self.capacity
        updated = now
    }

    /// Charges `bytes` just read at `now`.
    ///
    /// - Returns: How long to wait before the next read: zero while tokens are left, else the time the debt takes
    ///   to be paid at ``rate``.
    mutating func take(_ bytes: Int, at now: ContinuousClock.Instant) -> Duration {
        refill(at: now)
        tokens -= Double(bytes)
        return wait(at: now)
    }

    /// How long a reader must wait at `now` before reading again (zero unless in debt); charges nothing.
    func wait(at now: ContinuousClock.Instant) -> Duration {
        var bucket = self
        bucket.refill(at: now)
        guard bucket.tokens < 0 else { return .zero }
        return .nanoseconds(Int64((-bucket.tokens / rate * 1e9).rounded(.up)))
    }

    private mutating func refill(at now: ContinuousClock.Instant) {
        // A clock read out of order (two readers racing to the lock) adds nothing rather than taking tokens away.
        guard now > updated else { return }
        tokens = min(capacity, tokens + rate * (now - updated).seconds)
        updated = now
    }
}
