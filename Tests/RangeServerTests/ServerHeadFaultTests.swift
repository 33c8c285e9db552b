import Foundation
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// The faults that make HEAD disagree with GET (`head=403`, `head=stall`, `head-length-delta`), over plain HTTP and
/// TLS, in a query and in a scenario step, read with raw clients; `head=405` has its test in `ServerVariantFaultTests`.
@Suite("HEAD faults")
struct ServerHeadFaultTests: TLSWireSuite {
    /// One request over TLS: the status (0 when nothing came), the header fields (lower-case names), the bytes and
    /// how the connection ended.
    private func tlsRequest(
        _ server: RangeServer, _ target: String, method: String, limit: TimeAmount? = nil
    ) async throws -> (status: Int, headers: [String: String], bytes: [UInt8], ending: TLSProbe.Ending) {
        let port = try #require(server.tlsPort)
        let trust = try #require(server.certificateAuthorityPEM)
        let result = try await TLSProbe.get(port: port, target: target, trustPEM: trust, limit: limit, method: method)
        let head = String(decoding: result.bytes.prefix(result.bytes.count - result.body.count), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, result.bytes, result.ending)
    }

    @Test("head=403 refuses HEAD with 403 over http and https; GET is served as usual")
    func headForbidden() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=41&head=403"
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.status == 403)
            #expect(head.header("allow") == nil)
            #expect(head.body.isEmpty)
            let secure = try await tlsRequest(server, target, method: "HEAD")
            #expect(secure.status == 403)
            let get = try await FaultWire.get(server, target)
            #expect(get.status == 200)
            #expect(get.body == FaultWire.expected(seed: 41, count: 65_536))
            let secureGet = try await tlsRequest(server, target, method: "GET")
            #expect(secureGet.status == 200)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.map(\.status).sorted() == [200, 200, 403, 403])
            #expect(entries.allSatisfy { $0.faults == ["head=403"] })
        }
    }

    @Test("head-length-delta: HEAD's Content-Length is N off GET's, over http and https; GET is unchanged")
    func headLengthDelta() async throws {
        try await withRangeServer(configuration()) { server in
            for (delta, declared) in [("-1K", 64_512), ("%2B100", 65_636), ("64K", 131_072), ("-1M", 0)] {
                let target = "/bytes/64K?seed=42&head-length-delta=" + delta
                let head = try await FaultWire.get(server, target, method: "HEAD")
                #expect(head.status == 200)
                #expect(head.header("content-length") == String(declared), "\(delta)")
                #expect(head.body.isEmpty)
                let secure = try await tlsRequest(server, target, method: "HEAD")
                #expect(secure.status == 200)
                #expect(secure.headers["content-length"] == String(declared), "\(delta)")
                let get = try await FaultWire.get(server, target)
                #expect(get.header("content-length") == "65536")
                #expect(get.body == FaultWire.expected(seed: 42, count: 65_536))
            }
            // A file's HEAD too; the journal names the fault in canonical form.
            let file = try await FaultWire.get(server, "/files/sample.bin?head-length-delta=-16", method: "HEAD")
            let fileGet = try await FaultWire.get(server, "/files/sample.bin")
            let length = try #require(fileGet.header("content-length").flatMap(Int.init))
            #expect(file.header("content-length") == String(length - 16))
            let entries = try await FaultWire.entries(server, target: "/bytes/64K?seed=42&head-length-delta=%2B100")
            #expect(entries.count == 3)
            #expect(entries.allSatisfy { $0.faults == ["head-length-delta=100"] })
        }
    }

    @Test("head=stall: HEAD gets no byte over http and https until the client leaves; GET is served as usual")
    func headStall() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=43&head=stall"
            let port = server.port
            // Each client leaves after a second, stretched by the time scale: the stall never ends, so a longer wait
            // changes nothing it sees, but the journal below counts both HEADs, so the server must have read each
            // one (over TLS, after a handshake) before its client leaves.
            let plain = try await FaultWire.blocking {
                let connection = try RawHTTPConnection(port: port, timeout: scaled(seconds: 1))
                try connection.request("HEAD", target, close: true)
                return connection.readToEnd()
            }
            #expect(plain.bytes.isEmpty)
            #expect(plain.ending == .timedOut)
            let secure = try await tlsRequest(server, target, method: "HEAD", limit: TimeAmount(scaled(.seconds(1))))
            #expect(secure.bytes.isEmpty)
            #expect(secure.ending == .timedOut)
            let get = try await FaultWire.get(server, target)
            #expect(get.status == 200)
            #expect(get.body.count == 65_536)
            // The server notices each client's departure: both HEADs are journaled as closed by the client, which
            // did not leave a healthy response of its own accord.
            let entries = try await FaultWire.entries(server, target: target)
            let heads = entries.filter { $0.method == "HEAD" }
            #expect(heads.count == 2)
            #expect(heads.allSatisfy { $0.outcome == .clientClosed && !$0.abandoned && $0.faults == ["head=stall"] })
            #expect(server.journal.openCount() == 0)
        }
    }

    @Test("head=stall ends when the server stops: the connection closes without an answer, journaled as stalled")
    func headStallAtStop() async throws {
        let server = try RangeServer.start(configuration())
        defer { server.stop() }
        let port = server.port
        let target = "/bytes/8K?head=stall"
        let client = Task {
            try await FaultWire.blocking {
                let connection = try RawHTTPConnection(port: port)
                try connection.request("HEAD", target, close: true)
                return connection.readToEnd()
            }
        }
        // Bounded: until the server holds the HEAD open.
        _ = await waitUntil { server.journal.openCount() > 0 }
        #expect(server.journal.openCount() == 1)
        server.stop()
        let ended = try await client.value
        #expect(ended.bytes.isEmpty)
        #expect(ended.ending == .closed || ended.ending == .reset)
        let entries = await FaultWire.waitForJournal(server).filter { $0.target == target }
        #expect(entries.map(\.outcome) == [.stalled])
    }

    @Test("head faults in a scenario step apply to HEADs that look at that attempt; GET spends it as usual")
    func headInAStep() async throws {
        let scenario = """
            {
              "description": "HEAD disagrees with GET on the first attempt.",
              "resource": "/bytes/8K?seed=44",
              "attempts": [ { "head": 403, "head-length-delta": "-100" }, { "head-length-delta": "+1K" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["head-lies.json": scenario])) { server in
            let target = "/scenario/head-lies/run1"
            let first = try await FaultWire.get(server, target, method: "HEAD")
            #expect(first.status == 403)
            let secureFirst = try await tlsRequest(server, target, method: "HEAD")
            #expect(secureFirst.status == 403)
            let get = try await FaultWire.get(server, target)
            #expect(get.status == 200)
            #expect(get.body.count == 8192)
            let second = try await FaultWire.get(server, target, method: "HEAD")
            #expect(second.status == 200)
            #expect(second.header("content-length") == String(8192 + 1024))
            // The query layers over the step: head=stall from the URL, the step's delta kept.
            let stalled = try await FaultWire.blocking { [port = server.port] in
                let connection = try RawHTTPConnection(port: port, timeout: 1)
                try connection.request("HEAD", target + "?head=stall", close: true)
                return connection.readToEnd()
            }
            #expect(stalled.bytes.isEmpty && stalled.ending == .timedOut)
            _ = try await FaultWire.get(server, target)
            let third = try await FaultWire.get(server, target, method: "HEAD")
            #expect(third.header("content-length") == "8192")
        }
    }

    @Test("head takes 405, 403 or stall, head-length-delta a signed size: anything else is a 400 with one line")
    func badValues() async throws {
        try await withRangeServer(configuration()) { server in
            for (query, named) in [
                ("head=404", "head=404: expected 405, 403 or stall"),
                ("head-length-delta=1Q", "head-length-delta=1Q: expected a size with an optional sign"),
            ] {
                let response = try await FaultWire.get(server, "/bytes/1K?" + query)
                #expect(response.status == 400)
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(body.contains(named), "\(body)")
                #expect(body.split(separator: "\n").count == 1, "\(body)")
            }
        }
    }
}
