/// How much per-run state is kept, and for how long: the bounds of a ``BoundedTable``.
///
/// A run token is the client's to choose, so anything kept per token must be bounded, or a client that makes up
/// tokens (a soak, a fuzzer, a long-lived service) grows the process without end.
public struct Retention: Sendable, Hashable {
    /// The most entries kept; one more forgets the least recently used.
    public var limit: Int
    /// An entry unused for this long is forgotten; nil keeps entries until ``limit`` pushes them out.
    public var idleExpiry: Duration?

    /// Makes bounds.
    ///
    /// - Parameters:
    ///   - limit: the most entries kept, at least 1.
    ///   - idleExpiry: how long an unused entry is kept; nil for no expiry.
    public init(limit: Int, idleExpiry: Duration?) {
        self.limit = limit
        self.idleExpiry = idleExpiry
    }

    /// The server's default for scenario runs: 100,000 attempt counts, each forgotten after an hour unused.
    public static let runs = Retention(limit: 100_000, idleExpiry: .seconds(3600))

    /// The values ``limit`` may take.
    public static let limitRange = 1...100_000_000
    /// The values ``idleExpiry`` may take, in whole seconds.
    public static let idleExpirySecondsRange = 1...(366 * 86400)

    /// Nil when the bounds are usable, otherwise why not, naming the options (`--run-limit`, `--run-expiry`).
    ///
    /// - Parameters:
    ///   - limitOption: the option that sets ``limit``.
    ///   - expiryOption: the option that sets ``idleExpiry``.
    /// - Returns: one line, or nil.
    public func problem(limitOption: String = "--run-limit", expiryOption: String = "--run-expiry") -> String? {
        guard Self.limitRange.contains(limit) else {
            return "\(limitOption) must be from 1 to \(Self.limitRange.upperBound), got \(limit)"
        }
        if let idleExpiry {
            let seconds = idleExpiry.components.seconds
            guard idleExpiry >= .seconds(1), seconds <= Int64(Self.idleExpirySecondsRange.upperBound) else {
                let given = idleExpiry.components.attoseconds == 0 ? "\(seconds)" : "\(idleExpiry)"
                return "\(expiryOption) must be from 1 to \(Self.idleExpirySecondsRange.upperBound) seconds, got "
                    + given
            }
        }
        return nil
    }
}
