import Foundation
import NIOCore
import Testing

@testable import DownloadEngine

/// A transport with one small body that says whether it has already arrived in full.
private struct OneBodyTransport: Transport {
    let body: [UInt8]
    let arrived: Bool

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        let body = body
        return TransportResponse(
            status: 200, headers: [("Content-Length", "\(body.count)"), ("ETag", "\"small-v1\"")],
            body: TransportBody(
                drain: { sink in _ = try sink.consume(ByteBuffer(bytes: body)) },
                abandon: {},
                isComplete: { [arrived] in arrived }))
    }

    func shutdown() async {}
}

@Suite("Task log lines of a small new task")
struct SmallBodyLogTests {
    /// The task log's records after one small download, in order.
    private func loggedStates(arrived: Bool) async throws -> (states: [DownloadState], etags: [String?], file: Data) {
        let dir = makeTemporaryDirectory("small-\(arrived)")
        let body = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
        let engine = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: testConfiguration()) {
            OneBodyTransport(body: body, arrived: arrived)
        }
        let id = try await engine.add(.init(url: "http://small.test/f", destination: dir + "/f"))
        let result = await engine.result(of: id)
        await engine.shutdown()
        guard case .completed = result else {
            Issue.record("expected completion, got \(result)")
            return ([], [], Data())
        }
        let log = try Data(contentsOf: URL(fileURLWithPath: dir + "/.rangefetch/" + StateStore.taskLogName))
        let records = try log.split(separator: 0x0A).map { try StateStore.decode(Data($0)) }
        return (records.map(\.state), records.map(\.etag), try Data(contentsOf: URL(fileURLWithPath: dir + "/f")))
    }

    /// A body still arriving is announced with its validators before its first byte is written, so a `kill -9`
    /// mid-body leaves a partial file the next run resumes.
    @Test func bodyStillArrivingIsLoggedBeforeItIsWritten() async throws {
        let logged = try await loggedStates(arrived: false)
        #expect(logged.states == [.running, .completed])
        #expect(logged.etags == ["\"small-v1\"", "\"small-v1\""])
        #expect(logged.file.count == 5_000)
    }

    /// A body already in memory is written and moved into place with its completed line only: one JSON encoding
    /// and one write per small file instead of two.
    @Test func bodyAlreadyInMemoryGetsOnlyItsCompletedLine() async throws {
        let logged = try await loggedStates(arrived: true)
        #expect(logged.states == [.completed])
        #expect(logged.etags == ["\"small-v1\""])
        #expect(logged.file.count == 5_000)
    }
}
