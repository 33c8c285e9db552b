import Foundation

/// The grades of an earlier run, read from its `--json` report: what a client's own CI compares a run with, so the
/// failures it already knows about do not fail every build (`rangecheck --baseline FILE`).
///
/// A cell is compared by scenario and client column. A report written before grades existed gives a failed cell
/// the grade `fail`.
package struct Baseline: Hashable, Sendable {
    /// Where the baseline was read from, for the reports.
    public var path: String
    /// The scheme of the run it came from (`http` or `https`).
    public var scheme: String
    /// The grade of each cell, by scenario and then client; nil for a cell that was skipped or n/a.
    public var grades: [String: [String: Grade?]]

    /// Makes a baseline.
    ///
    /// - Parameters:
    ///   - path: where it was read from.
    ///   - scheme: the scheme of its run.
    ///   - grades: each cell's grade, by scenario and then client.
    public init(path: String, scheme: String = "http", grades: [String: [String: Grade?]]) {
        self.path = path
        self.scheme = scheme
        self.grades = grades
    }

    /// Reads a `--json` report.
    ///
    /// - Parameter path: the report's path.
    /// - Returns: the baseline.
    /// - Throws: `ConformanceError.invalidArgument` naming the file when it cannot be read or is not a report.
    public static func load(path: String) throws(ConformanceError) -> Baseline {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidArgument("--baseline \(path): cannot read the file")
        }
        return try parse(data, path: path)
    }

    /// Reads a `--json` report's text.
    ///
    /// - Parameters:
    ///   - data: the report.
    ///   - path: its name, for errors and the reports.
    /// - Returns: the baseline.
    /// - Throws: `ConformanceError.invalidArgument` naming the file when it is not a report.
    public static func parse(_ data: Data, path: String) throws(ConformanceError) -> Baseline {
        struct Document: Decodable {
            struct Cell: Decodable {
                var scenario: String
                var client: String
                var result: String
                var grade: String?
            }

            var scheme: String?
            var cells: [Cell]
        }
        let document: Document
        do { document = try JSONDecoder().decode(Document.self, from: data) } catch {
            throw .invalidArgument(
                "--baseline \(path): not a rangecheck --json report (no cells with scenario, client, result)")
        }
        var grades: [String: [String: Grade?]] = [:]
        for cell in document.cells {
            let grade: Grade?
            switch cell.result {
            case "pass": grade = .pass
            case "FAIL", "fail":
                guard let text = cell.grade else {
                    grade = .fail
                    break
                }
                guard let named = Grade(rawValue: text) else {
                    throw .invalidArgument(
                        "--baseline \(path): \(cell.scenario) × \(cell.client) has grade '\(text)', not one of "
                            + Grade.allCases.map(\.rawValue).joined(separator: ", "))
                }
                grade = named
            default: grade = nil
            }
            grades[cell.scenario, default: [:]][cell.client] = .some(grade)
        }
        return Baseline(path: path, scheme: document.scheme ?? "http", grades: grades)
    }

    /// How a cell compares with the baseline.
    public enum Change: Hashable, Sendable {
        /// The baseline has no such cell (a new row or column): listed, never failing the run.
        case new
        /// Graded worse than in the baseline, which had this grade (`pass` for a cell skipped or n/a there).
        case worse(was: Grade)
        /// Graded better than in the baseline, which had this grade.
        case fixed(was: Grade)
        /// Graded as in the baseline.
        case same

        /// `new`, `worse`, `fixed` or `same`.
        public var label: String {
            switch self {
            case .new: "new"
            case .worse: "worse"
            case .fixed: "fixed"
            case .same: "same"
            }
        }

        /// The grade in the baseline; nil for a new cell.
        public var was: Grade? {
            switch self {
            case .new: nil
            case .worse(let grade), .fixed(let grade): grade
            case .same: nil
            }
        }
    }

    /// How a cell compares with the baseline: a cell skipped or n/a (here or there) counts as a pass, so it is never
    /// worse than anything and anything graded worse than pass is worse than it.
    ///
    /// - Parameter cell: a cell of this run.
    /// - Returns: the change.
    public func change(of cell: MatrixCell) -> Change {
        guard let row = grades[cell.scenario], let before = row[cell.client] else { return .new }
        let was = before ?? .pass
        let now = cell.grade ?? .pass
        if now > was { return .worse(was: was) }
        if now < was { return .fixed(was: was) }
        return .same
    }

    /// The matrix with each cell's ``MatrixCell/baseline`` set and ``Matrix/baseline`` naming this file.
    ///
    /// - Parameter matrix: this run.
    /// - Returns: the matrix compared.
    public func compare(_ matrix: Matrix) -> Matrix {
        var compared = matrix
        compared.baseline = path
        compared.cells = matrix.cells.map { cell in
            var marked = cell
            marked.baseline = change(of: cell)
            return marked
        }
        return compared
    }
}
