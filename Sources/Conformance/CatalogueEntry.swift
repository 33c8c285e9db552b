import Foundation
import RangeServer

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
    /// The RFC sections the row rests on and the reports of its failure in real clients (`rfc`, `seen-in`).
    public var references: RowReferences

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
        for route in expectation.files where scenario.routes[route] == nil {
            throw .invalidExpectation("\(scenario.name): expect.files: no route named \"\(route)\"")
        }
    }

    /// The transfers of a run whose scenario URL is `base`: the URL itself to `OUTPUTS/NAME.bin`, or each of
    /// `expect.files` (`base/ROUTE` to `OUTPUTS/ROUTE`).
    ///
    /// - Parameters:
    ///   - base: the run's scenario URL, `ORIGIN/scenario/NAME/RUN`.
    ///   - outputs: the directory the outputs go in.
    /// - Returns: the transfers, in order.
    public func transfers(base: String, outputs: String) -> [ClientJob.Transfer] {
        expectation.files.isEmpty
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
    public static func references(_ entries: [CatalogueEntry]) -> [String: RowReferences] {
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
}
