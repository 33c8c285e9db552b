import Foundation
import RangeServer

/// The bytes a resource should have, so the harness can tell which version an output holds.
public enum ReferenceContent: Hashable, Sendable {
    /// `/bytes/{length}?seed=S`: generated, any version.
    case generated(length: UInt64, seed: UInt64)
    /// `/files/...`: a file under the served root; it has one version.
    case file(path: String, length: UInt64)

    /// The full length.
    public var length: UInt64 {
        switch self {
        case .generated(let length, _), .file(_, let length): length
        }
    }

    /// Reads a resource path the way the server does.
    ///
    /// - Parameters:
    ///   - resource: e.g. `/bytes/4M?seed=10` or `/files/sample.bin`.
    ///   - root: the directory served under `/files/`.
    /// - Returns: the reference content and the version the path names (1 unless `version=` is given).
    /// - Throws: `ConformanceError.invalidExpectation` for a path the harness cannot reproduce.
    public static func parse(_ resource: String, root: String) throws(ConformanceError) -> (ReferenceContent, Int) {
        let parts = resource.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        var seed: UInt64 = 0
        var version = 1
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard item.count == 2 else { continue }
                if item[0] == "seed", let value = UInt64(item[1]) { seed = value }
                if item[0] == "version", let value = Int(item[1]) { version = value }
            }
        }
        if path.hasPrefix("/bytes/"), let length = ByteSize.parse(String(path.dropFirst(7))) {
            return (.generated(length: length, seed: seed), version)
        }
        if path.hasPrefix("/files/") {
            let file = root + "/" + path.dropFirst(7)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                let size = attributes[.size] as? NSNumber
            else { throw .invalidExpectation("resource \(resource): \(file) does not exist") }
            return (.file(path: file, length: size.uint64Value), 1)
        }
        throw .invalidExpectation("resource \(resource): only /bytes/ and /files/ resources can be judged")
    }

    /// Fills `buffer` with version `version`'s bytes at `offset` (the file ignores the version).
    func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: UInt64, version: Int, file: FileHandle?) {
        switch self {
        case .generated(_, let seed):
            ContentGenerator(seed: seed, version: UInt64(version)).fill(buffer, offset: offset)
        case .file:
            guard let file else { return }
            try? file.seek(toOffset: offset)
            let data = (try? file.read(upToCount: buffer.count)) ?? Data()
            data.withUnsafeBytes { source in buffer.copyMemory(from: source) }
        }
    }
}

/// One row of the matrix: a scenario and what passing means.
public struct CatalogueEntry: Sendable {
    /// The scenario as the server loaded it.
    public var scenario: Scenario
    /// Its `expect` section.
    public var expectation: ScenarioExpectation
    /// The resource's reference bytes.
    public var reference: ReferenceContent
    /// Every version the scenario can serve, so outputs can be attributed (spliced versions).
    public var versions: [Int]
    /// The version a successful output must equal: `expect.version`, else the latest the scenario serves.
    public var expectedVersion: Int

    /// The name.
    public var name: String { scenario.name }
    /// Whether it is tagged `slow` (skipped unless slow scenarios are included).
    public var isSlow: Bool { expectation.tags.contains("slow") }

    /// Makes an entry from a loaded scenario.
    ///
    /// - Parameters:
    ///   - scenario: the scenario.
    ///   - root: the directory served under `/files/`.
    /// - Throws: `ConformanceError.invalidExpectation` for a missing or bad `expect` section, or a
    ///   `files` entry naming an undefined route.
    public init(scenario: Scenario, root: String) throws(ConformanceError) {
        self.scenario = scenario
        expectation = try ScenarioExpectation.parse(scenario.expect, scenario: scenario.name)
        let (reference, base) = try ReferenceContent.parse(scenario.resource, root: root)
        self.reference = reference
        var versions: Set<Int> = [base]
        for route in scenario.routes.values {
            for step in route.attempts { if let version = step.version { versions.insert(version) } }
        }
        self.versions = versions.sorted()
        expectedVersion = expectation.version ?? self.versions.last ?? base
        for route in expectation.files where scenario.routes[route] == nil {
            throw .invalidExpectation("\(scenario.name): expect.files: no route named \"\(route)\"")
        }
    }

    /// Loads the catalogue: every scenario in a directory, each with its expectation, in name order.
    ///
    /// - Parameters:
    ///   - directory: the scenario directory.
    ///   - root: the directory served under `/files/`.
    /// - Returns: the entries.
    /// - Throws: the loader's `RangeServerError` for a bad scenario, or `ConformanceError` for a bad `expect`.
    public static func load(directory: String, root: String) throws -> [CatalogueEntry] {
        try Scenario.loadDirectory(directory).values.sorted { $0.name < $1.name }.map {
            try CatalogueEntry(scenario: $0, root: root)
        }
    }
}
