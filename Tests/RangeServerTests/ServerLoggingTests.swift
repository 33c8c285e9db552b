import Logging
import NIOConcurrencyHelpers
import RangeServer
import Testing

/// Keeps every message a logger is given, for a test to read.
private struct CapturingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    let records: NIOLockedValueBox<[Record]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        records.withLockedValue {
            $0.append(Record(level: event.level, message: event.message.description, metadata: merged))
        }
    }
}

@Suite("Server logging through swift-log")
struct ServerLoggingTests {
    @Test("the embedder's logger gets one info message per request, with the exchange's fields as metadata")
    func accessLogThroughLogger() async throws {
        let records = NIOLockedValueBox<[CapturingLogHandler.Record]>([])
        let configuration = Fixtures.configuration {
            $0.logger = Logger(label: "test", factory: { _ in CapturingLogHandler(records: records) })
        }
        try await withRangeServer(configuration) { server in
            let response = try rawRequest(port: server.port, "GET", "/bytes/1K")
            #expect(response.status == 200)
            // The message is logged before the exchange is journaled.
            _ = try await WireCheck.journalEntries(server, count: 1)
        }
        let logged = records.withLockedValue { $0 }
        let record = try #require(logged.first)
        #expect(logged.count == 1)
        #expect(record.level == .info)
        #expect(record.metadata["method"] == "GET")
        #expect(record.metadata["target"] == "/bytes/1K")
        #expect(record.metadata["status"] == "200")
        #expect(record.metadata["bytes"] == "1024")
        #expect(record.metadata["outcome"] == "complete")
        #expect(record.metadata["faults"] == nil)
        // The message is the line `rangeserver` prints.
        #expect(record.message.hasPrefix("127.0.0.1 \"GET /bytes/1K HTTP/1.1\" 200 1024 complete "))
        #expect(record.message.hasSuffix("ms"))
    }

    @Test("the default logger discards: it asks for nothing below critical")
    func defaultLoggerDiscards() {
        #expect(RangeServer.Configuration().logger.logLevel == .critical)
    }
}
