import Foundation
import RangeServer

extension ClientDefinition: Decodable {
    /// The members of a definition.
    enum Key: String, CodingKey, CaseIterable {
        case name, description, program, build, version, package, can, segmented, transient, defaults, arguments
        case environment
        case listFile = "list-file"
        case serveOver = "serve-over"
        case protocols
        case h2cArguments = "h2c-arguments"
    }

    /// The protocols a definition's `protocols` may name.
    static let protocolNames: Set<String> = ["http/1.1", "h2", "h2c"]

    /// Decodes a definition, strictly: unknown keys, unknown placeholders and bad values are errors at the key.
    ///
    /// - Parameters:
    ///   - decoder: a decoder positioned at the file's object.
    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, allowed: Key.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: Key.self)
        func bad(_ key: Key, _ reason: String) -> DecodingError {
            .dataCorruptedError(forKey: key, in: c, debugDescription: reason)
        }
        func text(_ key: Key) throws -> String {
            guard c.contains(key) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: c.codingPath, debugDescription: "is required"))
            }
            guard let value = try? c.decode(String.self, forKey: key), !value.isEmpty else {
                throw bad(key, "must be a non-empty string")
            }
            return value
        }
        name = try text(.name)
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw bad(.name, "may use letters, digits, '-', '_' and '.'")
        }
        description = try text(.description)
        program = try text(.program)
        build = nil
        if c.contains(.build) {
            guard let steps = try? c.decode([[String]].self, forKey: .build), !steps.isEmpty,
                steps.allSatisfy({ !($0.first ?? "").isEmpty })
            else {
                throw bad(.build, "must be an array of commands, each an array of words, e.g. [[\"go\", \"build\"]]")
            }
            if let unknown = steps.joined().lazy.flatMap(ClientBuild.unknownPlaceholders(in:)).first {
                throw bad(.build, "unknown placeholder {\(unknown)} (a build step knows {client-dir} and {build-dir})")
            }
            build = ClientBuild(steps: steps)
        }
        if build == nil, ClientTemplate.names(in: program).contains("build-dir") {
            throw bad(.program, "uses {build-dir} without a build step")
        }
        guard c.contains(.version), let version = try? c.decode([String].self, forKey: .version) else {
            throw bad(.version, "must be the arguments that print the version, e.g. [\"--version\"]")
        }
        versionArguments = version
        guard c.contains(.package), let package = try? c.decode([String: String].self, forKey: .package),
            package.count == 1, let (registry, packageName) = package.first,
            ["debian", "pypi"].contains(registry), !packageName.isEmpty
        else { throw bad(.package, "must be {\"debian\": NAME} or {\"pypi\": NAME}") }
        self.package = Package(registry: registry, name: packageName)
        capabilities = []
        if c.contains(.can) {
            guard let names = try? c.decode([String].self, forKey: .can) else {
                throw bad(.can, "must be an array of kill, prefill, several-files, named-output")
            }
            for ability in names {
                guard let known = Self.abilities.first(where: { $0.name == ability }) else {
                    throw bad(.can, "'\(ability)' is not one of kill, prefill, several-files, named-output")
                }
                capabilities.insert(known.capability)
            }
        }
        if c.contains(.segmented) {
            guard let flag = try? c.decode(Bool.self, forKey: .segmented) else {
                throw bad(.segmented, "must be true or false")
            }
            if flag { capabilities.insert(.segmented) }
        }
        transientExitCodes = []
        if c.contains(.transient) {
            guard let list = try? c.decode(String.self, forKey: .transient) else {
                throw bad(.transient, "must be a string of exit statuses, e.g. \"2,6,29\"")
            }
            do {
                transientExitCodes = try TransientExits.codes(parsing: list, in: "transient")
            } catch {
                throw bad(.transient, error.message.replacingOccurrences(of: "transient: ", with: ""))
            }
        }
        defaultRetries = nil
        if c.contains(.defaults) {
            guard let defaults = try? c.decode([String: Int].self, forKey: .defaults),
                Set(defaults.keys).isSubset(of: ["retries"]), defaults.values.allSatisfy({ $0 >= 0 })
            else { throw bad(.defaults, "must be {\"retries\": N}, N at least 0") }
            defaultRetries = defaults["retries"]
        }
        guard c.contains(.arguments) else {
            throw DecodingError.keyNotFound(
                Key.arguments, .init(codingPath: c.codingPath, debugDescription: "is required"))
        }
        arguments = try c.decode([ClientTemplate].self, forKey: .arguments)
        environment = [:]
        if c.contains(.environment) {
            guard let variables = try? c.decode([String: String].self, forKey: .environment) else {
                throw bad(.environment, "must be an object of variable names and template strings")
            }
            for (variable, value) in variables {
                if let unknown = ClientTemplate.names(in: value).first(where: { ClientTemplate.placeholders[$0] == nil }
                ) {
                    throw bad(.environment, "\(variable): unknown placeholder {\(unknown)}")
                }
            }
            environment = variables
        }
        servedOver = nil
        if c.contains(.serveOver) {
            guard let file = try? c.decode(String.self, forKey: .serveOver), !file.isEmpty, !file.hasPrefix("/"),
                !file.split(separator: "/", omittingEmptySubsequences: false).contains(where: {
                    $0.isEmpty || $0 == "." || $0 == ".." || $0 == "~"
                })
            else {
                throw bad(
                    .serveOver, "must be a file's path below the server's root, e.g. wheels/x-1.0-py3-none-any.whl")
            }
            servedOver = file
        }
        protocols = ["http/1.1"]
        if c.contains(.protocols) {
            guard let names = try? c.decode([String].self, forKey: .protocols), !names.isEmpty,
                names.allSatisfy({ Self.protocolNames.contains($0) })
            else { throw bad(.protocols, "must be an array of http/1.1, h2 and h2c") }
            protocols = Set(names)
        }
        let protocols = self.protocols ?? []
        h2cArguments = nil
        if c.contains(.h2cArguments) {
            guard let words = try? c.decode([String].self, forKey: .h2cArguments), !words.isEmpty,
                words.allSatisfy({ !$0.isEmpty })
            else { throw bad(.h2cArguments, "must be the words that ask for h2c, e.g. [\"--http2-prior-knowledge\"]") }
            h2cArguments = words
        }
        if protocols.contains("h2c") != (h2cArguments != nil) {
            throw bad(.h2cArguments, "must be given exactly when protocols names h2c")
        }
        listFile = nil
        if c.contains(.listFile) {
            guard let object = try? c.decode([String: String].self, forKey: .listFile), let file = object["name"],
                let entry = object["entry"], object.count == 2, !file.contains("/"), !file.isEmpty
            else { throw bad(.listFile, "must be {\"name\": FILE, \"entry\": TEMPLATE}") }
            if let unknown = ClientTemplate.names(in: entry).first(where: { ClientTemplate.placeholders[$0] == nil }) {
                throw bad(.listFile, "entry: unknown placeholder {\(unknown)}")
            }
            listFile = ListFile(name: file, entry: entry)
        }
        if build == nil, arguments.contains(where: { $0.placeholderNames.contains("build-dir") }) {
            throw bad(.arguments, "uses {build-dir} without a build step")
        }
        if arguments.contains(where: { $0.placeholderNames.contains("list-file") }), listFile == nil {
            throw bad(.arguments, "uses {list-file} without a list-file")
        }
        // Every shape it takes names the URL, in the arguments or in the list file they give.
        for shape in ClientTemplate.Shape.allCases where shape == .one || capabilities.contains(shape.capability) {
            var names = Set(arguments.flatMap { $0.names(for: shape) })
            if names.contains("list-file"), let listFile { names.formUnion(ClientTemplate.names(in: listFile.entry)) }
            guard names.contains("url") else {
                throw bad(.arguments, "has no {url} for a job of shape \(shape.rawValue)")
            }
            if shape == .named, names.contains("output") {
                throw bad(.arguments, "gives {output} to a job named by the server (give {output-dir})")
            }
        }
    }

    /// Loads every definition in `directory` (`*.json` but `schema.json`), in name order.
    ///
    /// - Parameters:
    ///   - directory: the directory.
    /// - Returns: the definitions.
    /// - Throws: `ConformanceError.invalidClientDefinition` as `FILE:LINE:COLUMN: client.KEY: reason`, also for a
    ///   file whose `name` is not its own name, or two files of one name; `.io` for a directory that cannot be read.
    public static func load(directory: String) throws(ConformanceError) -> [ClientDefinition] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            throw .io("cannot read the client definitions in \(directory)")
        }
        var definitions: [ClientDefinition] = []
        for file in names.sorted() where file.hasSuffix(".json") && file != "schema.json" {
            let path = "\(directory)/\(file)"
            guard let data = FileManager.default.contents(atPath: path) else { throw .io("cannot read \(path)") }
            let decoded: ClientDefinition
            do {
                decoded = try ScenarioSection(
                    parsing: String(decoding: data, as: UTF8.self), source: path, path: "client"
                ).decode(ClientDefinition.self)
            } catch {
                throw .invalidClientDefinition(error.message)
            }
            var definition = decoded
            definition.directory = MatrixRunner.absolute(directory)
            guard "\(definition.name).json" == file else {
                throw .invalidClientDefinition("\(path): client.name: '\(definition.name)' is not the file's name")
            }
            definitions.append(definition)
        }
        return definitions
    }
}

extension ClientTemplate.Shape {
    /// The capability a definition needs to take jobs of this shape.
    var capability: ClientCapabilities {
        switch self {
        case .one: []
        case .several: .multipleFiles
        case .named: .serverNamedOutput
        }
    }
}

extension ClientTemplate: Decodable {
    private enum GroupKey: String, CodingKey, CaseIterable {
        case `for`, words, each
    }

    /// Decodes an item: a word, an optional fragment (an array), or a group (an object with `for` and `words`, or
    /// `each`); an unknown placeholder or shape is an error at the item.
    ///
    /// - Parameters:
    ///   - decoder: a decoder positioned at the item.
    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            if let unknown = Self.names(in: text).first(where: { Self.placeholders[$0] == nil }) {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription: "unknown placeholder {\(unknown)} (known: "
                            + Self.placeholders.keys.sorted().map { "{\($0)}" }.joined(separator: ", ") + ")"))
            }
            self = .word(text)
            return
        }
        if let list = try? decoder.unkeyedContainer() {
            var items = list
            var fragment: [ClientTemplate] = []
            while !items.isAtEnd { fragment.append(try items.decode(ClientTemplate.self)) }
            self = .optional(fragment)
            return
        }
        guard let c = try? decoder.container(keyedBy: GroupKey.self) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "must be a word, an array (words that need every placeholder's value) or an "
                        + "object with for and words, or each"))
        }
        try rejectUnknownKeys(decoder, allowed: GroupKey.allCases.map(\.rawValue))
        var shapes: Set<Shape>?
        if c.contains(.for) {
            guard let names = try? c.decode([String].self, forKey: .for), !names.isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: .for, in: c, debugDescription: "must be a non-empty array of one, several, named")
            }
            shapes = []
            for name in names {
                guard let shape = Shape(rawValue: name) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .for, in: c, debugDescription: "'\(name)' is not one, several or named")
                }
                shapes?.insert(shape)
            }
        }
        guard c.contains(.words) != c.contains(.each) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "needs exactly one of words and each"))
        }
        let each = c.contains(.each)
        self = .group(
            shapes: shapes, each: each, items: try c.decode([ClientTemplate].self, forKey: each ? .each : .words))
    }

    /// The placeholder names the template uses for jobs of `shape`.
    func names(for shape: Shape) -> [String] {
        switch self {
        case .word(let text): Self.names(in: text)
        case .optional(let items): items.flatMap { $0.names(for: shape) }
        case .group(let shapes, _, let items):
            shapes?.contains(shape) ?? true ? items.flatMap { $0.names(for: shape) } : []
        }
    }
}
