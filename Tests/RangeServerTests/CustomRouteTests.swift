import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import RangeServer

/// An embedder's routes: bodies reach the handler, limits hold, the handler runs off the pool, nothing is journaled.
@Suite("Custom routes")
struct CustomRouteTests {
    /// A server whose `/_echo/` route answers with what it was sent, and counts its calls.
    static func echoConfiguration(calls: NIOLockedValueBox<Int>, limit: Int = 1024) -> RangeServer.Configuration {
        var configuration = Fixtures.configuration()
        configuration.customRoutes = [
            CustomRoute(prefix: "/_echo/", maximumBodySize: limit) { request in
                calls.withLockedValue { $0 += 1 }
                // Suspends: the answer must still arrive once the task resumes on another thread.
                try? await Task.sleep(for: .milliseconds(20))
                let query = request.queryItems.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
                let text = "\(request.method) \(request.path) [\(query)] \(request.headers["x-probe"] ?? "-") "
                return CustomRoute.Response(
                    status: 201, headers: [("X-Echo", "yes"), ("Content-Type", "text/plain")],
                    body: Array(text.utf8) + request.body)
            }
        ]
        return configuration
    }

    @Test("a POST body reaches the handler whole, and its status, headers and body are sent")
    func postBody() async throws {
        let calls = NIOLockedValueBox(0)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await withRangeServer(Self.echoConfiguration(calls: calls)) { server in
                var request = HTTPClientRequest(url: server.baseURL + "/_echo/a%20b?x=1&y=two+words")
                request.method = .POST
                request.headers.add(name: "X-Probe", value: "probe")
                request.body = .bytes(ByteBuffer(string: String(repeating: "z", count: 1000)))
                let response = try await client.execute(request, timeout: .seconds(10))
                #expect(response.status.code == 201)
                #expect(response.headers.first(name: "x-echo") == "yes")
                let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                #expect(body == "POST /_echo/a%20b [x=1,y=two words] probe " + String(repeating: "z", count: 1000))
                #expect(calls.withLockedValue { $0 } == 1)
            }
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    @Test("a body over the route's limit is answered 413 without calling the handler")
    func bodyTooLarge() async throws {
        let calls = NIOLockedValueBox(0)
        try await withRangeServer(Self.echoConfiguration(calls: calls, limit: 100)) { server in
            let port = server.port
            let response = try await FaultWire.blocking {
                let connection = try RawHTTPConnection(port: port)
                let body = String(repeating: "y", count: 101)
                try connection.send(
                    Array("POST /_echo/x HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\n\(body)".utf8))
                return try connection.readResponse()
            }
            #expect(response.status == 413)
            #expect(calls.withLockedValue { $0 } == 0)
        }
    }

    @Test("custom route requests are not journaled; resource requests still are")
    func notJournaled() async throws {
        let calls = NIOLockedValueBox(0)
        try await withRangeServer(Self.echoConfiguration(calls: calls)) { server in
            let echo = try await FaultWire.get(server, "/_echo/one")
            #expect(echo.status == 201)
            let bytes = try await FaultWire.get(server, "/bytes/1K")
            #expect(bytes.status == 200)
            let entries = await FaultWire.waitForJournal(server)
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.journal.entries().map(\.target) == ["/bytes/1K"])
            #expect(entries.allSatisfy { !$0.target.hasPrefix("/_echo/") })
        }
    }

    @Test("a path outside every prefix is served by the server as before")
    func otherPaths() async throws {
        let calls = NIOLockedValueBox(0)
        try await withRangeServer(Self.echoConfiguration(calls: calls)) { server in
            let response = try await FaultWire.get(server, "/_echoes")
            #expect(response.status == 404)
            let health = try await FaultWire.get(server, "/healthz")
            #expect(health.status == 200)
            #expect(calls.withLockedValue { $0 } == 0)
        }
    }

    @Test("the handler sees whether the request came over TLS")
    func overTLS() async throws {
        var configuration = ServerTLSTests.tlsConfiguration()
        configuration.customRoutes = [
            CustomRoute(prefix: "/_tls/") { request in .text(200, request.isTLS ? "tls" : "plain") }
        ]
        try await withRangeServer(configuration) { server in
            let port = try #require(server.tlsPort)
            let trust = try #require(server.certificateAuthorityPEM)
            let secure = try await TLSProbe.get(port: port, target: "/_tls/x", trustPEM: trust)
            #expect(String(decoding: secure.body, as: UTF8.self) == "tls\n")
            let plain = try await FaultWire.get(server, "/_tls/x")
            #expect(String(decoding: plain.body, as: UTF8.self) == "plain\n")
        }
    }
}
