/// The built-in clients by name, in the matrix's column order.
public struct ClientCatalogue: Sendable {
    /// The built-in column names.
    public static let builtInNames = [
        "engine", "engine-x4", "rangefetch", "rangefetch-x4", "curl", "wget", "wget2", "aria2c", "aria2c-x4", "axel",
        "axel-n4", "urlsession",
    ]

    /// Where `rangecheck` lives; `rangefetch` is looked for there before PATH.
    public var rangecheckDirectory: String?

    /// Makes the catalogue.
    ///
    /// - Parameters:
    ///   - rangecheckDirectory: the directory searched first for `rangefetch`.
    public init(rangecheckDirectory: String?) {
        self.rangecheckDirectory = rangecheckDirectory
    }

    /// The columns a run asks for: the built-in clients `names` selects, and every command.
    ///
    /// Defining a command is asking for its column, so every command runs, named in `names` or not, and once. With
    /// no `names`, every built-in runs; otherwise the built-ins named, in the order named (a `names` that names only
    /// commands runs no built-in). The named columns come first in the order named, then the commands not named, in
    /// the order defined.
    ///
    /// - Parameters:
    ///   - names: the `--client` names (built-in or command), in order; repeats are ignored.
    ///   - commands: the `--client-command` clients, in order.
    /// - Returns: the columns, in order.
    /// - Throws: `ConformanceError.invalidArgument` naming a name that is neither a built-in nor a command.
    public func columns(
        named names: [String], commands: [SubprocessClient]
    ) throws(ConformanceError) -> [any ClientAdapter] {
        let known = Self.builtInNames + commands.map(\.name)
        for name in names where !known.contains(name) {
            throw .invalidArgument("unknown client '\(name)' (known: \(known.joined(separator: ", ")))")
        }
        var order: [String] = []
        for name in (names.isEmpty ? Self.builtInNames : names) + commands.map(\.name) where !order.contains(name) {
            order.append(name)
        }
        return order.compactMap { name in
            commands.first { $0.name == name } ?? client(named: name)
        }
    }

    /// A built-in client.
    ///
    /// - Parameters:
    ///   - name: one of `builtInNames`.
    /// - Returns: the adapter, or nil for an unknown name.
    public func client(named name: String) -> (any ClientAdapter)? {
        switch name {
        case "engine": EngineClient.make()
        case "engine-x4": EngineClient.make(connectionsPerFile: 4)
        case "rangefetch": SubprocessClient.rangefetch(nextTo: rangecheckDirectory)
        case "rangefetch-x4": SubprocessClient.rangefetch(nextTo: rangecheckDirectory, connections: 4)
        case "curl": SubprocessClient.curl
        case "wget": SubprocessClient.wget
        case "wget2": SubprocessClient.wget2
        case "aria2c": SubprocessClient.aria2c
        case "aria2c-x4": SubprocessClient.aria2cSegmented
        case "axel": SubprocessClient.axel
        case "axel-n4": SubprocessClient.axelSegmented
        case "urlsession": URLSessionClient()
        default: nil
        }
    }
}
