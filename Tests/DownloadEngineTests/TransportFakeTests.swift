import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import DownloadEngine

/// A scripted transport: answers by URL and records every request. Used where the loopback-only rangeserver
/// cannot show a behaviour (a second origin).
final class ScriptedTransport: Transport, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [TransportRequest] = []
    private let answer: @Sendable (TransportRequest) -> (Int, [(name: String, value: String)], [UInt8])

    init(_ answer: @escaping @Sendable (TransportRequest) -> (Int, [(name: String, value: String)], [UInt8])) {
        self.answer = answer
    }

    var requests: [TransportRequest] { lock.withLock { seen } }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { seen.append(request) }
        let (status, headers, body) = answer(request)
        return TransportResponse(
            status: status, headers: headers,
            body: TransportBody(
                drain: { sink in
                    if !body.isEmpty { _ = try sink.consume(ByteBuffer(bytes: body)) }
                },
                abandon: {},
                isComplete: { true }
            ))
    }

    func shutdown() async {}
}

@Suite("Redirect headers (scripted transport)")
struct RedirectHeaderTests {
    @Test("6c. Authorization and Cookie are dropped on a cross-origin hop, kept on a same-origin one")
    func sensitiveHeadersDroppedCrossOrigin() async throws {
        let body = Array("hello".utf8)
        let transport = ScriptedTransport { request in
            switch request.url {
            case "http://a.test/start": (302, [("Location", "/same")], [])
            case "http://a.test/same": (303, [("Location", "http://b.test/other")], [])
            default: (200, [("Content-Length", "5"), ("ETag", "\"v\"")], body)
            }
        }
        var configuration = testConfiguration()
        configuration.headers = fields([("Authorization", "Bearer secret"), ("Cookie", "c=1"), ("X-Keep", "yes")])
        let dir = makeTemporaryDirectory()
        let engine = try DownloadEngine(stateDirectory: dir + "/.rangefetch", configuration: configuration) {
            transport
        }
        let id = try await engine.add(.init(url: "http://a.test/start", destination: dir + "/f"))
        let result = await engine.result(of: id)
        await engine.shutdown()
        guard case .completed = result else {
            Issue.record("expected completion, got \(result)")
            return
        }
        let sent = transport.requests
        #expect(sent.map(\.url) == ["http://a.test/start", "http://a.test/same", "http://b.test/other"])
        func names(_ r: TransportRequest) -> Set<String> { Set(r.headers.map { $0.name.lowercased() }) }
        #expect(names(sent[1]).isSuperset(of: ["authorization", "cookie", "x-keep", "accept-encoding"]))
        #expect(!names(sent[2]).contains("authorization"))
        #expect(!names(sent[2]).contains("cookie"))
        #expect(names(sent[2]).contains("x-keep"))
        #expect(try String(contentsOfFile: dir + "/f", encoding: .utf8) == "hello")
    }

    @Test("an engine dropped without shutdown does not trap, is released, and leaves its state directory usable")
    func droppedEngineIsSafe() throws {
        let dir = makeTemporaryDirectory()
        weak var dropped: DownloadEngine?
        do {
            let engine = try DownloadEngine(stateDirectory: dir)
            dropped = engine
        }
        // A task or transport holding the engine past its last reference would keep its connections open forever.
        #expect(dropped == nil)
        let reopened = try DownloadEngine(stateDirectory: dir)
        #expect(reopened.loadProblems.isEmpty)
        #expect(reopened.stateDirectory == LexicalPath.absolute(dir))
    }
}
