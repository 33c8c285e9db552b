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
