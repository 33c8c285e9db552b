/// How bad a verdict is, from `pass` to `corrupt`: a reader of the matrix can tell a client that loses its users'
/// data from one that only fetched a MiB twice (docs/conformance.md, "Grades").
///
/// Ordered by severity: `pass < costly < unsafe < fail < corrupt`. A cell takes the worst grade of its violations.
public enum Grade: String, CaseIterable, Comparable, Codable, Hashable, Sendable {
    /// Every expectation held.
    case pass
    /// Right and safe, but wasteful or impolite: over the row's bounds on bytes fetched twice, requests, elapsed
    /// time or connections, or a request sooner than Retry-After allowed.
    case costly
    /// The output is right this time, but the client did what corrupts data in a sibling row (resumed with no
    /// validator or a wrong one); the violation names that row.
    case unsafe
    /// No correct output where one was expected, the wrong kind of failure, a hang, or a broken MUST.
    case fail
    /// The client reported success, or left its output in place as if complete, with bytes that are not exactly the
    /// expected representation.
    case corrupt

    /// The order of severity, 0 for `pass`.
    public var severity: Int {
        switch self {
        case .pass: 0
        case .costly: 1
        case .unsafe: 2
        case .fail: 3
        case .corrupt: 4
        }
    }

    public static func < (lhs: Grade, rhs: Grade) -> Bool { lhs.severity < rhs.severity }

    /// The grades worse than pass, worst first.
    public static let worstFirst: [Grade] = [.corrupt, .fail, .unsafe, .costly]

    /// The order of the summary line's counts: the grades that lose data (`corrupt`, then `unsafe`, corrupt in a
    /// sibling row) before those that do not.
    public static let summaryOrder: [Grade] = [.corrupt, .unsafe, .fail, .costly]

    /// `pass`, or the grade in capitals (`CORRUPT`, `FAIL`, `UNSAFE`, `COSTLY`): the cell's label.
    public var label: String { self == .pass ? "pass" : rawValue.uppercased() }

    /// The grade a `--gate-at` or `gate-at` value names.
    ///
    /// - Parameter text: `corrupt`, `fail`, `unsafe` or `costly`.
    /// - Returns: the grade, nil for anything else.
    public static func threshold(_ text: String) -> Grade? {
        guard let grade = Grade(rawValue: text), grade != .pass else { return nil }
        return grade
    }
}
