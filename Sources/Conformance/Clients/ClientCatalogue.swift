import Foundation

/// The columns `rangecheck` knows: the clients written in Swift (the in-process engine and URLSession, and rangefetch,
/// whose SIGINT pause a definition cannot state) and every client definition file (`fixtures/clients/*.json`), in
/// the matrix's column order.
public struct ClientCatalogue: Sendable {
    /// The columns written in Swift, before the definitions' (`urlsession` comes last, after them).
    public static let swiftNames = ["engine", "engine-x4", "rangefetch", "rangefetch-x4", "urlsession"]

    /// The order of the definitions shipped with the harness; others follow in name order.
    static let definitionOrder = ["curl", "wget", "wget2", "aria2c", "aria2c-x4", "axel", "axel-n4"]

    /// Where `rangecheck` lives; `rangefetch` is looked for there before PATH.
    public var rangecheckDirectory: String?
    /// The client definitions, in column order.
    public let definitions: [ClientDefinition]

    /// Makes the catalogue.
    ///
    /// - Parameters:
    ///   - rangecheckDirectory: the directory searched first for `rangefetch`.
    ///   - definitions: the client definitions (``loadDefinitions(_:)``).
    public init(rangecheckDirectory: String?, definitions: [ClientDefinition] = []) {
        self.rangecheckDirectory = rangecheckDirectory
        self.definitions = definitions.sorted { a, b in
            let (i, j) = (Self.definitionOrder.firstIndex(of: a.name), Self.definitionOrder.firstIndex(of: b.name))
            return (i ?? Int.max, a.name) < (j ?? Int.max, b.name)
        }
    }

    /// The known column names, in order: the engine and rangefetch columns, the definitions, then `urlsession`.
    public var names: [String] {
        Array(Self.swiftNames.dropLast()) + definitions.map(\.name).filter { !Self.swiftNames.contains($0) }
            + ["urlsession"]
    }

    /// The directory of client definitions beside a scenario directory: `fixtures/clients` for `fixtures/scenarios`.
    ///
    /// - Parameters:
    ///   - scenariosDirectory: the scenario directory.
    /// - Returns: the definitions' directory.
    public static func definitionsDirectory(besideScenarios scenariosDirectory: String) -> String {
        let parent = (scenariosDirectory as NSString).deletingLastPathComponent
        return (parent.isEmpty ? "." : parent) + "/clients"
    }

    /// Loads the definitions of several directories; a later directory's definition replaces an earlier one of the
    /// same name (a user's own flags for a shipped client).
    ///
    /// - Parameters:
    ///   - directories: the directories, in order.
    ///   - optional: directories that may be missing (the default one beside the scenarios); any other must exist.
    /// - Returns: the definitions.
    /// - Throws: `ConformanceError.invalidClientDefinition` naming file, line and column, or `.io` for a directory
    ///   that cannot be read; a definition named like a Swift column is refused.
    public static func loadDefinitions(
        _ directories: [String], optional: Set<String> = []
    ) throws(ConformanceError) -> [ClientDefinition] {
        var byName: [String: ClientDefinition] = [:]
        for directory in directories {
            if optional.contains(directory), !FileManager.default.fileExists(atPath: directory) { continue }
            for definition in try ClientDefinition.load(directory: directory) {
                guard !swiftNames.contains(definition.name) else {
                    throw .invalidClientDefinition(
                        "\(directory)/\(definition.name).json: client.name: '\(definition.name)' is a column written "
                            + "in Swift; name the definition otherwise")
                }
                byName[definition.name] = definition
            }
        }
        return Array(byName.values)
    }

    /// The columns a run asks for: the known clients `names` selects, and every command.
    ///
    /// Defining a command is asking for its column, so every command runs, named in `names` or not, and once. With
    /// no `names`, every known client runs; otherwise those named, in the order named (a `names` that names only
    /// commands runs no other). The named columns come first in the order named, then the commands not named, in
    /// the order defined.
    ///
    /// - Parameters:
    ///   - names: the `--client` names (known or command), in order; repeats are ignored.
    ///   - commands: the `--client-command` clients, in order.
    /// - Returns: the columns, in order.
    /// - Throws: `ConformanceError.invalidArgument` naming a name that is neither known nor a command.
    public func columns(
        named names: [String], commands: [SubprocessClient]
    ) throws(ConformanceError) -> [any ClientAdapter] {
        let known = self.names + commands.map(\.name)
        for name in names where !known.contains(name) {
            throw .invalidArgument("unknown client '\(name)' (known: \(known.joined(separator: ", ")))")
        }
        var order: [String] = []
        for name in (names.isEmpty ? self.names : names) + commands.map(\.name) where !order.contains(name) {
            order.append(name)
        }
        return order.compactMap { name in
            commands.first { $0.name == name } ?? client(named: name)
        }
    }

    /// A known client.
    ///
    /// - Parameters:
    ///   - name: one of ``names``.
    /// - Returns: the adapter, or nil for an unknown name.
    public func client(named name: String) -> (any ClientAdapter)? {
        switch name {
        case "engine": EngineClient.make(rangefetchDirectory: rangecheckDirectory)
        case "engine-x4": EngineClient.make(connectionsPerFile: 4, rangefetchDirectory: rangecheckDirectory)
        case "rangefetch": SubprocessClient.rangefetch(nextTo: rangecheckDirectory)
        case "rangefetch-x4": SubprocessClient.rangefetch(nextTo: rangecheckDirectory, connections: 4)
        case "urlsession": URLSessionClient()
        default: definitions.first { $0.name == name }?.client()
        }
    }

    /// The catalogue of the definitions shipped in this repository (`fixtures/clients`), for tests and tools run
    /// from a checkout.
    ///
    /// - Parameters:
    ///   - root: the repository's root.
    ///   - rangecheckDirectory: the directory searched first for `rangefetch`.
    /// - Returns: the catalogue.
    /// - Throws: a definition error.
    public static func shipped(root: String, rangecheckDirectory: String? = nil) throws(ConformanceError) -> Self {
        Self(rangecheckDirectory: rangecheckDirectory, definitions: try loadDefinitions(["\(root)/fixtures/clients"]))
    }
}
