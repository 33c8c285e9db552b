import Conformance
import RangeServer
import TestSupport
import Testing

/// The whole catalogue (slow scenarios aside) against the in-process engine: a failing scenario shows by name.
@Suite(.serialized) struct EngineConformanceTests {
    static let scenarios: [String] =
        ((try? CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")) ?? []).filter {
            !$0.isSlow
        }.map(
            \.name)

    @Test(arguments: scenarios)
    func engine(scenario: String) async throws {
        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
        configuration.scenariosDirectory = "fixtures/scenarios"
        configuration.threads = 8
        let entry = try #require(
            try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files").first {
                $0.name == scenario
            })
        let cell = try await withRangeServer(configuration) { server in
            await MatrixRunner.runPair(
                entry, client: EngineClient.make(), server: server, options: .forTests)
        }
        #expect(!cell.result.isFailure, "\(scenario): \(cell.result.reason)")
    }
}
