/// Everything the conformance harness can fail with, as one type.
///
/// The cases are static members around a private code, so a case can be added without breaking callers.
/// `description` is one line meant for people: it names the file, flag or client at fault.
public struct ConformanceError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidExpectation
        case invalidArgument
        case clientFailed
        case io
        case invalidReport
        case notFound
        case conflict
        case gone
        case invalidClientDefinition
    }

    private let code: Code
    /// The one-line explanation.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A scenario's `expect` section is malformed.
    ///
    /// - Parameters:
    ///   - message: `FILE:LINE:COLUMN: expect.KEY: reason`.
    /// - Returns: the error.
    public static func invalidExpectation(_ message: String) -> ConformanceError { .init(.invalidExpectation, message) }

    /// A command-line value or runner option is not usable (a bad glob, shard, client template, …).
    ///
    /// - Parameters:
    ///   - message: what is wrong and with which value.
    /// - Returns: the error.
    public static func invalidArgument(_ message: String) -> ConformanceError { .init(.invalidArgument, message) }

    /// A client could not be launched or driven (not a verdict: a verdict is a `CellResult`).
    ///
    /// - Parameters:
    ///   - message: the client and what went wrong.
    /// - Returns: the error.
    public static func clientFailed(_ message: String) -> ConformanceError { .init(.clientFailed, message) }

    /// A file or directory operation failed (temporary directories, reports).
    ///
    /// - Parameters:
    ///   - message: the path and the reason.
    /// - Returns: the error.
    public static func io(_ message: String) -> ConformanceError { .init(.io, message) }

    /// A remote client's request or result to `rangecheck serve` cannot be judged (a malformed body, an unknown
    /// run or scenario, a run reported twice).
    ///
    /// - Parameters:
    ///   - message: what is wrong, naming the field or run.
    /// - Returns: the error.
    public static func invalidReport(_ message: String) -> ConformanceError { .init(.invalidReport, message) }

    /// `rangecheck serve` was asked about a scenario, run or report cell it does not have.
    ///
    /// - Parameters:
    ///   - message: what was asked for.
    /// - Returns: the error.
    public static func notFound(_ message: String) -> ConformanceError { .init(.notFound, message) }

    /// `rangecheck serve` was asked to do something already done (a run reported twice).
    ///
    /// - Parameters:
    ///   - message: what was done already.
    /// - Returns: the error.
    public static func conflict(_ message: String) -> ConformanceError { .init(.conflict, message) }

    /// `rangecheck serve` was asked about a run it issued and has since forgotten (unused past its expiry, pushed out
    /// by newer runs, or issued before the service restarted); a deleted run is `notFound`.
    ///
    /// - Parameters:
    ///   - message: which run, and why it is gone.
    /// - Returns: the error.
    public static func gone(_ message: String) -> ConformanceError { .init(.gone, message) }

    /// A client definition file (`fixtures/clients/NAME.json`) is malformed.
    ///
    /// - Parameters:
    ///   - message: `FILE:LINE:COLUMN: client.KEY: reason`.
    /// - Returns: the error.
    public static func invalidClientDefinition(_ message: String) -> ConformanceError {
        .init(.invalidClientDefinition, message)
    }

    /// Whether two errors are the same kind, ignoring the message.
    ///
    /// - Parameters:
    ///   - other: the error to compare with.
    /// - Returns: true when both were made by the same factory.
    public func isSameKind(as other: ConformanceError) -> Bool { code == other.code }

    /// The message.
    public var description: String { message }
}
