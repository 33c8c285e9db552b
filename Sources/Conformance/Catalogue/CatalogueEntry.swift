import Foundation
import RangeServer

/// One row of the matrix: a scenario and what passing means.
public struct CatalogueEntry: Sendable {
    /// The scenario as the server loaded it.
    public var scenario: Scenario
    /// Its `expect` section.
    public var expectation: ScenarioExpectation
    /// The resource's reference bytes, at the length its path gives (the first attempt's).
    package var reference: ReferenceContent
    /// The length each version was last served with, by version: a step's `size` shrinks or grows the resource.
    public var versionLengths: [Int: UInt64]
    /// The length a successful output must have: that of `expectedVersion` as last served.
    public var expectedLength: UInt64
    /// The expected version's bytes at `expectedLength`: what a successful output must equal.
    package var expectedContent: ReferenceContent { reference.resized(to: expectedLength) }
    /// The length `version` was last served with (the path's length for a version no step names).
    public func length(ofVersion version: Int) -> UInt64 { versionLengths[version] ?? reference.length }
    /// The bytes of `version` at the length it was last served with.
    package func content(ofVersion version: Int) -> ReferenceContent {
        reference.resized(to: length(ofVersion: version))
    }
    /// The reference at the longest length any attempt serves, so every byte any version was served with can be
    /// attributed to its version (a stale tail of a longer version included).
    package var attributionContent: ReferenceContent {
        reference.resized(to: versionLengths.values.reduce(reference.length, max))
    }
    /// Every version the scenario can serve, so outputs can be attributed (spliced versions).
    public var versions: [Int]
    /// The version a successful output must equal: `expect.version`, else the latest the scenario serves.
    public var expectedVersion: Int
    /// The RFC sections the row rests on and the reports of its failure in real clients (`rfc`, `seen-in`).
    package var references: RowReferences
    /// The file below the root the row is served over (``served(over:root:client:)``), its URL ending in the file's
    /// path after `/~/`; nil for the row's own resource.
    public var servedOver: String?

    /// The name.
    public var name: String { scenario.name }
    /// Whether it is tagged `slow` (skipped unless slow scenarios are included).
    public var isSlow: Bool { expectation.tags.contains("slow") }
    /// Whether it is tagged `http-only`: its fault cannot be served over TLS (`bad-chunk-after` writes past the TLS
    /// layer), so it is n/a in a `--tls` run.
    public var isHTTPOnly: Bool { expectation.tags.contains("http-only") }
    /// Whether a redirect sends the client to `https:` (the TLS port or a TLS fault listener), so the row needs a
    /// client that can be given the server's CA even in a plain http run.
    public var redirectsToTLS: Bool { scenario.redirectListeners.contains { $0.scheme == "https" } }

    /// Makes an entry from a loaded scenario.
    ///
    /// - Parameters:
    ///   - scenario: the scenario.
    ///   - root: the directory served under `/files/`.
    /// - Throws: `ConformanceError.invalidExpectation` for a missing or bad `expect` section, a missing `rfc` or
    ///   `seen-in` key, or a `files` entry naming an undefined route.
    public init(scenario: Scenario, root: String) throws(ConformanceError) {
        self.scenario = scenario
        expectation = try ScenarioExpectation.parse(scenario.expect, scenario: scenario.name)
        references = try RowReferences.required(of: scenario)
        let (reference, base) = try ReferenceContent.parse(scenario.resource, root: root)
        self.reference = reference
        var versions: Set<Int> = [base]
        for route in scenario.routes.values {
            for step in route.attempts { if let version = step.version { versions.insert(version) } }
        }
        self.versions = versions.sorted()
        expectedVersion = expectation.version ?? self.versions.last ?? base
        versionLengths = Self.versionLengths(of: scenario, base: base, length: reference.length)
        expectedLength = versionLengths[expectedVersion] ?? reference.length
        for route in expectation.files where scenario.routes[route] == nil {
            throw .invalidExpectation("\(scenario.name): expect.files: no route named \"\(route)\"")
        }
    }

    /// The length each version is last served with: the steps' `size` in effect at each attempt, walked in attempt
    /// order, the other routes first and the scenario's own URL last (the one a download ends on).
    ///
    /// - Parameters:
    ///   - base: the version the resource path names.
    ///   - length: the length the resource path names.
    /// - Returns: the lengths by version; every version the scenario serves has one.
    static func versionLengths(of scenario: Scenario, base: Int, length: UInt64) -> [Int: UInt64] {
        var lengths: [Int: UInt64] = [base: length]
        // Routes serving another resource (a redirect target of its own) say nothing of this one's lengths.
        let routes = scenario.routes.filter { $0.value.resource == scenario.resource }.sorted {
            ($0.key == Scenario.mainRoute ? 1 : 0, $0.key) < ($1.key == Scenario.mainRoute ? 1 : 0, $1.key)
        }
        for (_, route) in routes where !route.attempts.isEmpty {
            for attempt in 1...route.attempts.count {
                let version = route.effectiveVersion(forAttempt: attempt, base: base)
                lengths[version] = route.effectiveSize(forAttempt: attempt) ?? length
            }
        }
        return lengths
    }

    /// The transfers of a run whose scenario URL is `base`: the URL itself to `OUTPUTS/NAME.bin`, or each of
    /// `expect.files` (`base/ROUTE` to `OUTPUTS/ROUTE`).
    ///
    /// - Parameters:
    ///   - base: the run's scenario URL, `ORIGIN/scenario/NAME/RUN`.
    ///   - outputs: the directory the outputs go in.
    /// - Returns: the transfers, in order.
    public func transfers(base: String, outputs: String) -> [ClientJob.Transfer] {
        if let servedOver {
            return [
                ClientJob.Transfer(
                    url: "\(base)/~/\(servedOver)", output: "\(outputs)/\((servedOver as NSString).lastPathComponent)")
            ]
        }
        return expectation.files.isEmpty
            ? [ClientJob.Transfer(url: base, output: "\(outputs)/\(name).bin")]
            : expectation.files.map { ClientJob.Transfer(url: "\(base)/\($0)", output: "\(outputs)/\($0)") }
    }

    /// Each scenario's description by name, as a matrix shows them.
    ///
    /// - Parameters:
    ///   - entries: the catalogue.
    /// - Returns: the descriptions.
    public static func descriptions(_ entries: [CatalogueEntry]) -> [String: String] {
        Dictionary(entries.map { ($0.name, $0.scenario.description) }, uniquingKeysWith: { first, _ in first })
    }

    /// Each row's references by name, as the reports show them.
    ///
    /// - Parameters:
    ///   - entries: the catalogue.
    /// - Returns: the references.
    package static func references(_ entries: [CatalogueEntry]) -> [String: RowReferences] {
        Dictionary(entries.map { ($0.name, $0.references) }, uniquingKeysWith: { first, _ in first })
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

    /// The scenarios of `entries` by name, as a server that is handed the loaded catalogue takes them
    /// (`RangeServer.Configuration.scenarios`).
    static func scenariosByName(_ entries: [CatalogueEntry]) -> [String: Scenario] {
        Dictionary(entries.map { ($0.name, $0.scenario) }, uniquingKeysWith: { first, _ in first })
    }
}
