/// A deterministic slice of the work, `--shard I/N`.
public struct Shard: Hashable, Sendable, CustomStringConvertible {
    /// 1-based index.
    public var index: Int
    /// How many shards there are.
    public var count: Int

    /// Parses `I/N` with 1 ≤ I ≤ N.
    ///
    /// - Parameters:
    ///   - text: the flag's value.
    /// - Throws: `ConformanceError.invalidArgument` when malformed.
    public init(parsing text: String) throws(ConformanceError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, index >= 1,
            index <= count
        else { throw .invalidArgument("--shard \(text): expected I/N with 1 <= I <= N, like 2/4") }
        self.index = index
        self.count = count
    }

    /// The whole matrix.
    public static let all = try! Shard(parsing: "1/1")

    /// `I/N`.
    public var description: String { "\(index)/\(count)" }

    /// The pairs of this shard: all (scenario, client) pairs in row-major order, every `count`-th one
    /// starting at `index - 1`, so the shards are disjoint, cover everything, and balance slow rows.
    ///
    /// - Parameters:
    ///   - scenarios: the rows, in order.
    ///   - clients: the columns, in order.
    /// - Returns: the pairs to run.
    public func pairs(scenarios: [String], clients: [String]) -> [(scenario: String, client: String)] {
        var result: [(scenario: String, client: String)] = []
        var position = 0
        for scenario in scenarios {
            for client in clients {
                if position % count == index - 1 { result.append((scenario, client)) }
                position += 1
            }
        }
        return result
    }
}
