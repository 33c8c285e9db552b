import RangeServer

/// A download the client saved under a name the server gave (`Content-Disposition`, a row's `output-names`): which
/// file of its output directory is the output, and what else the client left there.
///
/// The client is given a directory and no name. The output is the file under an allowed name that holds the whole
/// expected representation, else the largest file under an allowed name; every other file in the directory is kept
/// in ``others`` for the judge (a partial copy under the other name is a finding, a control file a note).
package struct ServerNamedOutput: Hashable, Sendable {
    /// The names the row allows, in the order its attempts give them.
    public var names: [String]
    /// The output, or a missing file named after the allowed names.
    public var output: OutputFacts
    /// Every other regular file the client left in the directory, in name order.
    public var others: [OutputFacts]

    /// Makes the facts.
    ///
    /// - Parameters:
    ///   - names: the allowed names.
    ///   - output: the output.
    ///   - others: the other files.
    public init(names: [String], output: OutputFacts, others: [OutputFacts]) {
        self.names = names
        self.output = output
        self.others = others
    }

    /// Picks the output among the files a client left.
    ///
    /// - Parameters:
    ///   - files: every regular file of the output directory, inspected.
    ///   - names: the allowed names.
    ///   - isComplete: whether a file holds exactly the expected representation.
    /// - Returns: the output and the rest.
    public static func resolve(
        _ files: [OutputFacts], names: [String], isComplete: (OutputFacts) -> Bool
    ) -> ServerNamedOutput {
        let allowed = files.filter { names.contains($0.name) }
        let chosen =
            allowed.first(where: isComplete)
            ?? allowed.max { ($0.size, $1.name) < ($1.size, $0.name) }
        let others = files.filter { $0.name != chosen?.name }.sorted { $0.name < $1.name }
        return ServerNamedOutput(
            names: names, output: chosen ?? .missing(names.joined(separator: " or ")), others: others)
    }

    /// Whether `output` holds exactly version `version` of a representation `length` bytes long.
    static func isComplete(_ output: OutputFacts, length: UInt64, version: Int) -> Bool {
        output.exists && output.size == length && output.segments.allSatisfy { $0.version == version }
    }
}

extension Judge {
    /// The rules for a client that names its output from the server: something is saved under a name the server
    /// gave, and nothing but the output is left under those names. A partial copy under the other name beside the
    /// output is `fail` (the user finds two files, one truncated, though nothing is lost); one holding bytes of no
    /// version is `corrupt`, a file under a final name that is not the file. Other files (a client's control file)
    /// are notes.
    ///
    /// - Parameters:
    ///   - facts: the run, with ``RunFacts/serverNamed`` set.
    /// - Returns: the violations and notes.
    static func serverNamedFindings(_ facts: RunFacts) -> (reasons: [Violation], notes: [String]) {
        guard let named = facts.serverNamed else { return ([], []) }
        var reasons: [Violation] = []
        var notes: [String] = []
        let listing = named.others.map { "\($0.name) (\(ByteSize.format($0.size)))" }.joined(separator: ", ")
        if !named.output.exists, !named.others.isEmpty {
            reasons.append(
                Violation(
                    "saved nothing under a name the server gave (\(named.names.joined(separator: " or "))); its "
                        + "directory holds \(listing)", grade: .fail))
        }
        for other in named.others {
            guard named.names.contains(other.name) else {
                notes.append("also left \(other.name) (\(ByteSize.format(other.size))) in the output directory")
                continue
            }
            guard other.size > 0 else { continue }
            let beside = named.output.exists ? " beside \(named.output.name)" : ""
            if let bad = other.segments.first(where: { $0.version == nil }) {
                reasons.append(
                    Violation(
                        "left \(other.name)\(beside) with bytes that are not the representation at offset "
                            + "\(bad.range.lowerBound)", grade: .corrupt))
            } else if !ServerNamedOutput.isComplete(other, length: facts.resourceLength, version: facts.expectedVersion)
            {
                reasons.append(
                    Violation(
                        "left a partial \(other.name) (\(ByteSize.format(other.size)) of "
                            + "\(ByteSize.format(facts.resourceLength)))\(beside)", grade: .fail))
            } else {
                notes.append("saved the file twice, as \(named.output.name) and \(other.name)")
            }
        }
        return (reasons, notes)
    }
}
