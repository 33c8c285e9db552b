import Foundation

extension Scenario {
    /// The file in a scenario directory that describes the format rather than a scenario.
    public static let schemaFileName = "schema.json"

    /// Loads every scenario in a directory.
    ///
    /// Each `NAME.json` file is one scenario named `NAME`; `schema.json`, hidden files and files not
    /// ending in `.json` are skipped. Everything is validated now, so a bad file stops start-up with
    /// a message instead of failing a request later.
    ///
    /// - Parameters:
    ///   - path: the directory, e.g. `fixtures/scenarios`.
    /// - Returns: the scenarios by name.
    /// - Throws: `RangeServerError.invalidScenario` naming the directory when it cannot be listed, or
    ///   the first bad file (in name order) as `PATH:LINE:COLUMN: reason`.
    public static func loadDirectory(_ path: String) throws -> [String: Scenario] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw RangeServerError.invalidScenario(
                "cannot list scenario directory \(path): \(error.localizedDescription)")
        }
        let directory = path.hasSuffix("/") ? String(path.dropLast()) : path
        var scenarios: [String: Scenario] = [:]
        for fileName in names.sorted()
        where fileName.hasSuffix(".json") && fileName != schemaFileName && !fileName.hasPrefix(".") {
            let filePath = "\(directory)/\(fileName)"
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: filePath, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            let scenario = try load(file: filePath)
            scenarios[scenario.name] = scenario
        }
        return scenarios
    }

    /// Loads one scenario file; its name is the file name without `.json`.
    ///
    /// - Parameters:
    ///   - path: the file's path, used as given in error messages.
    /// - Returns: the validated scenario.
    /// - Throws: `RangeServerError.invalidScenario` as `PATH:LINE:COLUMN: reason` for a syntax error,
    ///   an unknown key, a bad value, a redirect to an undefined route and so on, or `PATH: reason`
    ///   when the file cannot be read or its name is not usable in a URL.
    public static func load(file path: String) throws -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RangeServerError.invalidScenario("\(path): cannot read the file")
        }
        var fileName = Substring(path)
        if let slash = fileName.lastIndex(of: "/") { fileName = fileName[fileName.index(after: slash)...] }
        let name = fileName.hasSuffix(".json") ? String(fileName.dropLast(5)) : String(fileName)
        return try parse(Array(data), name: name, source: path)
    }

    /// Parses and validates a scenario from the bytes of a JSON file.
    ///
    /// - Parameters:
    ///   - bytes: the file's contents, UTF-8.
    ///   - name: the scenario name; letters, digits, `.`, `_` and `-` only, because it goes into URLs.
    ///   - source: how to name the file in error messages.
    /// - Returns: the validated scenario.
    /// - Throws: `RangeServerError.invalidScenario` as `SOURCE:LINE:COLUMN: reason`.
    public static func parse(_ bytes: [UInt8], name: String, source: String) throws -> Scenario {
        guard isURLSafeName(name) else {
            throw RangeServerError.invalidScenario(
                "\(source): scenario name \"\(name)\" must be non-empty and use only letters, digits, '.', '_' and '-'"
            )
        }
        let root: LocatedJSON
        do {
            root = try LocatedJSONParser.parse(bytes)
        } catch {
            throw RangeServerError.invalidScenario("\(source):\(error.location): \(error.reason)")
        }
        return try ScenarioReader(source: source).read(root, name: name)
    }

    /// Route and scenario names appear in URL paths, so they are kept to characters that need no escaping.
    static func isURLSafeName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".."
            && name.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                        || scalar == "." || scalar == "_" || scalar == "-")
            }
    }
}

/// Turns a located JSON tree into a `Scenario`, failing with the file, line and column of the culprit.
private struct ScenarioReader {
    private static let topLevelKeys = [
        "description", "resource", "attempts", "routes", "count-probes", "expect", "rfc", "seen-in",
    ]
    private static let requiredTopLevelKeys = ["description", "resource", "attempts"]
    private static let routeKeys = ["resource", "attempts"]
    private static let stepKeys =
        FaultKey.all.map(\.name) + ["version", "size", "redirect", "redirect-code", "redirect-host"]

    let source: String

    func fail(_ location: SourceLocation, _ reason: String) -> RangeServerError {
        .invalidScenario("\(source):\(location): \(reason)")
    }

    func read(_ root: LocatedJSON, name: String) throws -> Scenario {
        let members = try object(root, "the scenario")
        try checkKeys(members, allowed: Self.topLevelKeys, in: "the scenario")
        try require(Self.requiredTopLevelKeys, in: members, at: root.location, "the scenario")

        let description = try string(members["description"]!, "description")
        let resource = try resourcePath(members["resource"]!, "resource")
        var pendingRedirects: [(target: String, location: SourceLocation, path: String)] = []
        var routes: [String: Scenario.Route] = [:]
        routes[Scenario.mainRoute] = Scenario.Route(
            resource: resource,
            attempts: try steps(
                members["attempts"]!, path: "attempts", resource: resource, redirects: &pendingRedirects)
        )

        if let routesValue = members["routes"] {
            for member in try object(routesValue, "routes").list {
                let path = "routes.\(member.key)"
                guard Scenario.isURLSafeName(member.key) else {
                    throw fail(
                        member.keyLocation,
                        "route name \"\(member.key)\" must be non-empty and use only letters, digits, '.', '_' and '-'"
                    )
                }
                let routeMembers = try object(member.value, path)
                try checkKeys(routeMembers, allowed: Self.routeKeys, in: path)
                try require(["attempts"], in: routeMembers, at: member.value.location, path)
                let routeResource = try routeMembers["resource"].map { try resourcePath($0, "\(path).resource") }
                routes[member.key] = Scenario.Route(
                    resource: routeResource ?? resource,
                    attempts: try steps(
                        routeMembers["attempts"]!, path: "\(path).attempts", resource: routeResource ?? resource,
                        redirects: &pendingRedirects)
                )
            }
        }

        // Checked last: a redirect may name a route defined further down the file.
        for redirect in pendingRedirects where !redirect.target.hasPrefix("/") {
            guard routes[redirect.target] != nil, redirect.target != Scenario.mainRoute else {
                let known = routes.keys.filter { !$0.isEmpty }.sorted().joined(separator: ", ")
                throw fail(
                    redirect.location,
                    "\(redirect.path): redirect to undefined route \"\(redirect.target)\""
                        + " (routes: \(known.isEmpty ? "none" : known); use a path starting with '/' for a URL)"
                )
            }
        }

        let expect = try members["expect"].map { value in
            _ = try object(value, "expect")
            return ScenarioSection(value: value, source: source, path: "expect")
        }
        var scenario = Scenario(
            name: name, description: description, resource: resource, routes: routes, expect: expect)
        if let value = members["count-probes"] {
            guard case .bool(let flag) = value.kind else {
                throw fail(value.location, "count-probes must be true or false, found \(value.kindName)")
            }
            scenario.countsProbes = flag
        }
        scenario.rfc = try members["rfc"].map { try citations($0, kind: .rfc) }
        scenario.seenIn = try members["seen-in"].map { try citations($0, kind: .seenIn) }
        return scenario
    }

    /// An `rfc` or `seen-in` value: a non-empty array of distinct, well-formed references, or `{"none": "why"}`.
    private func citations(_ value: LocatedJSON, kind: ScenarioCitations.Kind) throws -> ScenarioCitations {
        let key = kind.rawValue
        let expected = "a non-empty array of references or {\"none\": \"why\"}"
        switch value.kind {
        case .array(let items):
            guard !items.isEmpty else {
                throw fail(value.location, "\(key) must be \(expected), found an empty array")
            }
            var references: [String] = []
            for (offset, item) in items.enumerated() {
                let text = try string(item, "\(key)[\(offset)]")
                guard kind.accepts(text) else {
                    throw fail(item.location, "\(key)[\(offset)]: \"\(text)\" is not \(kind.form)")
                }
                guard !references.contains(text) else {
                    throw fail(item.location, "\(key)[\(offset)]: \"\(text)\" is listed twice")
                }
                references.append(text)
            }
            return .cited(references)
        case .object(let list):
            let members = Members(list: list)
            try checkKeys(members, allowed: ["none"], in: key)
            guard let reason = members["none"] else {
                throw fail(value.location, "\(key) must be \(expected), found an empty object")
            }
            let text = try string(reason, "\(key).none")
            guard text.contains(where: { !$0.isWhitespace }) else {
                throw fail(reason.location, "\(key).none must say why there is no reference")
            }
            return .none(reason: text)
        default:
            throw fail(value.location, "\(key) must be \(expected), found \(value.kindName)")
        }
    }

    /// The steps of one route, whose resource is `resource`.
    private func steps(
        _ value: LocatedJSON,
        path: String,
        resource: String,
        redirects: inout [(target: String, location: SourceLocation, path: String)]
    ) throws -> [ScenarioStep] {
        guard case .array(let items) = value.kind else {
            throw fail(value.location, "\(path) must be an array of steps, found \(value.kindName)")
        }
        var result: [ScenarioStep] = []
        for (offset, item) in items.enumerated() {
            let stepPath = "\(path)[\(offset)]"
            let members = try object(item, stepPath)
            try checkKeys(members, allowed: Self.stepKeys, in: stepPath)
            var step = ScenarioStep()
            for member in members.list {
                let key = member.key
                if key == "redirect" {
                    let target = try string(member.value, "\(stepPath).redirect")
                    guard !target.isEmpty else {
                        throw fail(member.value.location, "\(stepPath): redirect must name a route or a path")
                    }
                    if ScenarioRedirect.hasListenerPrefix(target) {
                        // Another listener: its path is served as a plain resource path (or never answered).
                        guard ScenarioRedirect(target) != nil else {
                            throw fail(
                                member.value.location,
                                "\(stepPath): redirect \"\(target)\": expected \(ScenarioRedirect.grammar)")
                        }
                        step.redirect = target
                        continue
                    }
                    if target.hasPrefix("/") { _ = try resourcePath(member.value, "\(stepPath).redirect") }
                    step.redirect = target
                    redirects.append((target, member.value.location, stepPath))
                    continue
                }
                if case .array(let items) = member.value.kind, let repeatable = FaultKey.named[key],
                    repeatable.readEach != nil
                {
                    // A key given several times (`header`): one value per item, in order.
                    guard !items.isEmpty else {
                        throw fail(member.value.location, "\(stepPath).\(key) must not be an empty array")
                    }
                    for (index, item) in items.enumerated() {
                        let text = try string(item, "\(stepPath).\(key)[\(index)]")
                        do {
                            try step.faults.set(repeatable, from: text)
                        } catch {
                            throw fail(item.location, "\(stepPath): \(error.message)")
                        }
                    }
                    continue
                }
                let text = try scalarText(member.value, "\(stepPath).\(key)")
                switch key {
                case "version":
                    guard let version = FaultPlan.decimalInt(text), version >= 1 else {
                        throw fail(
                            member.value.location, "\(stepPath): version=\(text): expected an integer of at least 1")
                    }
                    step.version = version
                case "size":
                    guard let size = ByteSize.parse(text) else {
                        throw fail(
                            member.value.location,
                            "\(stepPath): size=\(text): expected a size: decimal bytes with an optional K/M/G/T "
                                + "suffix, like 3M")
                    }
                    // A file's length is the file's: only a generated representation can be made another length.
                    guard resource.hasPrefix("/bytes/") else {
                        throw fail(
                            member.value.location,
                            "\(stepPath): size works on /bytes/ resources only, and this route serves \(resource)")
                    }
                    step.size = size
                case "redirect-code":
                    guard let code = FaultPlan.decimalInt(text), ScenarioStep.redirectCodes.contains(code) else {
                        throw fail(
                            member.value.location,
                            "\(stepPath): redirect-code=\(text): expected one of 301, 302, 303, 307, 308"
                        )
                    }
                    step.redirectCode = code
                case "redirect-host":
                    guard ScenarioStep.isRedirectHost(text) else {
                        throw fail(
                            member.value.location,
                            "\(stepPath): redirect-host=\(text): expected a host name, an IPv4 address or a bracketed "
                                + "IPv6 address, like localhost"
                        )
                    }
                    step.redirectHost = text
                default:
                    // checkKeys guarantees every other key is a fault key.
                    do {
                        try step.faults.set(FaultKey.named[key]!, from: text)
                    } catch {
                        throw fail(member.value.location, "\(stepPath): \(error.message)")
                    }
                }
            }
            do {
                try step.faults.checkCombination()
            } catch {
                throw fail(members.location(of: error.key) ?? item.location, "\(stepPath): \(error.message)")
            }
            if step.redirectCode != nil, step.redirect == nil {
                throw fail(members.location(of: "redirect-code")!, "\(stepPath): redirect-code requires redirect")
            }
            if step.redirectHost != nil, step.redirect == nil {
                throw fail(members.location(of: "redirect-host")!, "\(stepPath): redirect-host requires redirect")
            }
            if step.redirect != nil, step.faults.status != nil {
                throw fail(members.location(of: "status")!, "\(stepPath): status cannot be combined with redirect")
            }
            result.append(step)
        }
        return result
    }

    /// A resource or redirect path: absolute, printable, and with a query the fault parser accepts.
    private func resourcePath(_ value: LocatedJSON, _ path: String) throws -> String {
        let text = try string(value, path)
        guard text.hasPrefix("/") else {
            throw fail(value.location, "\(path) must be an absolute path starting with '/', found \"\(text)\"")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw fail(value.location, "\(path) must not contain spaces or control characters")
        }
        if let question = text.firstIndex(of: "?") {
            do {
                _ = try FaultPlan.parse(query: QueryString.parse(String(text[text.index(after: question)...])))
            } catch let error as RangeServerError {
                throw fail(value.location, "\(path): \(error.message)")
            }
        }
        return text
    }

    /// The text a step value stands for: strings as written, numbers as their literal, booleans as true/false.
    private func scalarText(_ value: LocatedJSON, _ path: String) throws -> String {
        switch value.kind {
        case .string(let text): return text
        case .number(let literal): return literal
        case .bool(let flag): return flag ? "true" : "false"
        default: throw fail(value.location, "\(path) must be a string, number or boolean, found \(value.kindName)")
        }
    }

    private func string(_ value: LocatedJSON, _ path: String) throws -> String {
        guard case .string(let text) = value.kind else {
            throw fail(value.location, "\(path) must be a string, found \(value.kindName)")
        }
        return text
    }

    private func object(_ value: LocatedJSON, _ path: String) throws -> Members {
        guard case .object(let list) = value.kind else {
            throw fail(value.location, "\(path) must be an object, found \(value.kindName)")
        }
        return Members(list: list)
    }

    private func checkKeys(_ members: Members, allowed: [String], in path: String) throws {
        for member in members.list where !allowed.contains(member.key) {
            throw fail(
                member.keyLocation,
                "unknown key \"\(member.key)\" in \(path) (expected one of: \(allowed.joined(separator: ", ")))"
            )
        }
    }

    private func require(_ keys: [String], in members: Members, at location: SourceLocation, _ path: String) throws {
        for key in keys where members[key] == nil {
            throw fail(location, "\(path) is missing the required key \"\(key)\"")
        }
    }
}

/// An object's members with lookup by key; keys are unique (the parser rejects duplicates).
private struct Members {
    let list: [LocatedJSON.Member]

    subscript(key: String) -> LocatedJSON? { list.first { $0.key == key }?.value }

    func location(of key: String) -> SourceLocation? { list.first { $0.key == key }?.keyLocation }
}
