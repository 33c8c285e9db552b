/// One violation the judge found: its reason in one line, its grade, and for an `unsafe` one the sibling row where
/// the same behaviour corrupts the file.
public struct Violation: Codable, Hashable, Sendable {
    /// The reason, one line (`Range request without If-Range (expected "v1")`).
    public var reason: String
    /// How bad it is.
    public var grade: Grade
    /// For an `unsafe` violation, the scenario where the same behaviour corrupts the file (`version-change`).
    public var sibling: String?

    /// Makes a violation.
    ///
    /// - Parameters:
    ///   - reason: the reason, one line.
    ///   - grade: how bad it is.
    ///   - sibling: the row where it corrupts, for an `unsafe` violation.
    public init(_ reason: String, grade: Grade, sibling: String? = nil) {
        self.reason = reason
        self.grade = grade
        self.sibling = sibling
    }

    /// The reason with the sibling row: `Range request without If-Range (expected "v1"); corrupts the file in
    /// version-change`.
    public var line: String {
        guard let sibling else { return reason }
        return "\(reason); corrupts the file in \(sibling)"
    }

    /// The worst grade of some violations, `pass` for none.
    ///
    /// - Parameter violations: the violations.
    /// - Returns: the worst grade.
    public static func worst(_ violations: [Violation]) -> Grade { violations.map(\.grade).max() ?? .pass }
}
