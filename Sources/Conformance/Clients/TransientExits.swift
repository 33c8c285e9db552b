import Foundation

/// A client definition's transient exits, `NAME=CODES` (`--transient mytool=7,18`): the exit statuses after which the
/// harness runs the client again, because its own documentation says that running it again continues the download.
///
/// `CODES` is a comma-separated list of exit statuses, 1 to 255 (a death by signal N is `128 + N`, as a shell reports
/// it). The syntax is meant to be read the same wherever a client is defined.
package struct TransientExits: Hashable, Sendable {
    /// The client's name (its column).
    public var client: String
    /// The exit statuses that are re-run.
    public var codes: Set<Int32>

    /// Makes a declaration.
    ///
    /// - Parameters:
    ///   - client: the client's name.
    ///   - codes: the exit statuses that are re-run.
    public init(client: String, codes: Set<Int32>) {
        self.client = client
        self.codes = codes
    }

    /// Reads `NAME=CODES`.
    ///
    /// - Parameters:
    ///   - specification: the declaration, e.g. `mytool=7,18`.
    /// - Throws: `ConformanceError.invalidArgument` naming the declaration for a missing name or a bad code.
    public init(parsing specification: String) throws(ConformanceError) {
        guard let equals = specification.firstIndex(of: "="), equals != specification.startIndex else {
            throw .invalidArgument("--transient \(specification): expected NAME=CODES, e.g. mytool=7,18")
        }
        client = String(specification[..<equals])
        codes = try Self.codes(
            parsing: String(specification[specification.index(after: equals)...]), in: "--transient \(client)")
    }

    /// Reads a comma-separated list of exit statuses, `7,18`.
    ///
    /// - Parameters:
    ///   - list: the list.
    ///   - context: what to name in an error (`--transient mytool`).
    /// - Returns: the statuses.
    /// - Throws: `ConformanceError.invalidArgument` for an empty list or an item that is not 1 to 255.
    public static func codes(parsing list: String, in context: String) throws(ConformanceError) -> Set<Int32> {
        let items = list.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !list.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .invalidArgument("\(context): no exit status given (e.g. 7,18)")
        }
        var codes = Set<Int32>()
        for item in items {
            guard item.allSatisfy(\.isASCII), let code = Int32(item), (1...255).contains(code) else {
                throw .invalidArgument("\(context): '\(item)' is not an exit status from 1 to 255")
            }
            codes.insert(code)
        }
        return codes
    }

    /// The statuses as the reports show them: `7/18`, in increasing order.
    public static func describe(_ codes: Set<Int32>) -> String {
        codes.sorted().map(String.init).joined(separator: "/")
    }
}
