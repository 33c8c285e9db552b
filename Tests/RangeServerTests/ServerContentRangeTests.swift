import Foundation
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// The faults that make a 206's Content-Range say something else than a plain 206 would, over plain HTTP and TLS,
/// in a query and in a scenario step, read with raw clients.
@Suite("Content-Range faults")
struct ServerContentRangeTests {
    /// A server with the TLS port open and scenarios from `files` (name → JSON).
    private func configuration(scenarios files: [String: String] = [:]) throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("content-range-scenarios")
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return Fixtures.configuration {
            $0.tlsPort = 0
            $0.scenariosDirectory = directory
        }
    }

    /// One GET over TLS with `headers`: the status, the header fields (lower-case names) and the body.
    private func tlsGet(
        _ server: RangeServer, _ target: String, headers: [String: String] = [:]
    ) async throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        let port = try #require(server.tlsPort)
        let trust = try #require(server.certificateAuthorityPEM)
        let result = try await TLSProbe.get(port: port, target: target, trustPEM: trust, headers: headers)
        let head = String(decoding: result.bytes.prefix(result.bytes.count - result.body.count), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, result.body)
    }

    @Test("content-range-total=unknown: a 206 says bytes a-b/*, over http and https; a 200 is unchanged")
    func totalUnknown() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=31&content-range-total=unknown"
            let expected = FaultWire.expected(seed: 31, offset: 100, count: 100)
            let plain = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-199"])
            #expect(plain.status == 206)
            #expect(plain.header("content-range") == "bytes 100-199/*")
            #expect(plain.header("content-length") == "100")
            #expect(plain.body == expected)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=100-199"])
            #expect(secure.status == 206)
            #expect(secure.headers["content-range"] == "bytes 100-199/*")
            #expect(secure.body == expected)
            // A suffix range is resolved against the length the server knows; only the header hides it.
            let suffix = try await FaultWire.get(server, target, headers: ["Range": "bytes=-10"])
            #expect(suffix.header("content-range") == "bytes 65526-65535/*")
            let whole = try await FaultWire.get(server, target)
            #expect(whole.status == 200)
            #expect(whole.header("content-range") == nil)
            #expect(whole.body.count == 64 * 1024)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 4)
            #expect(entries.allSatisfy { $0.faults == ["content-range-total=unknown"] })
        }
    }

    @Test("content-range-total=unknown in a scenario step applies to that attempt only")
    func totalUnknownInAStep() async throws {
        let scenario = """
            {
              "description": "The first 206 hides the total.",
              "resource": "/bytes/8K?seed=32",
              "attempts": [ { "content-range-total": "unknown" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["hidden-total.json": scenario])) { server in
            let target = "/scenario/hidden-total/run1"
            let first = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-9"])
            #expect(first.status == 206)
            #expect(first.header("content-range") == "bytes 0-9/*")
            let second = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-9"])
            #expect(second.header("content-range") == "bytes 0-9/8192")
        }
    }

    @Test("content-range-total takes only unknown, answered 400 with one line naming it")
    func totalUnknownBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            let response = try await FaultWire.get(server, "/bytes/1K?content-range-total=42")
            #expect(response.status == 400)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.contains("content-range-total=42: expected unknown"), "\(body)")
            #expect(body.split(separator: "\n").count == 1, "\(body)")
        }
    }

    @Test("range-cap: a 206 carries at most SIZE bytes from the asked start and says so, over http and https")
    func rangeCap() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=33&range-cap=1K"
            let expected = FaultWire.expected(seed: 33, offset: 100, count: 1024)
            let plain = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-9999"])
            #expect(plain.status == 206)
            #expect(plain.header("content-range") == "bytes 100-1123/65536")
            #expect(plain.header("content-length") == "1024")
            #expect(plain.body == expected)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=100-9999"])
            #expect(secure.status == 206)
            #expect(secure.headers["content-range"] == "bytes 100-1123/65536")
            #expect(secure.body == expected)
            // A range within the cap, and an open end shorter than it, are served whole.
            let small = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-9"])
            #expect(small.header("content-range") == "bytes 0-9/65536")
            let tail = try await FaultWire.get(server, target, headers: ["Range": "bytes=65000-"])
            #expect(tail.header("content-range") == "bytes 65000-65535/65536")
            #expect(tail.body.count == 536)
            // Exactly the cap is not cut.
            let exact = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-1023"])
            #expect(exact.header("content-range") == "bytes 0-1023/65536")
            let whole = try await FaultWire.get(server, target)
            #expect(whole.status == 200)
            #expect(whole.body.count == 64 * 1024)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 6)
            #expect(entries.allSatisfy { $0.faults == ["range-cap=1K"] })
        }
    }

    @Test("range-cap in a scenario step, with content-range-total=unknown over it from the query")
    func rangeCapInAStep() async throws {
        let scenario = """
            {
              "description": "The first 206 is short.",
              "resource": "/bytes/8K?seed=34",
              "attempts": [ { "range-cap": 100 }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["capped.json": scenario])) { server in
            let target = "/scenario/capped/run1?content-range-total=unknown"
            let first = try await FaultWire.get(server, target, headers: ["Range": "bytes=10-"])
            #expect(first.status == 206)
            #expect(first.header("content-range") == "bytes 10-109/*")
            #expect(first.body == FaultWire.expected(seed: 34, offset: 10, count: 100))
            let second = try await FaultWire.get(server, target, headers: ["Range": "bytes=110-"])
            #expect(second.header("content-range") == "bytes 110-8191/*")
            #expect(second.body.count == 8192 - 110)
        }
    }

    @Test("range-cap takes a size above zero, answered 400 with one line naming it")
    func rangeCapBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            for value in ["0", "-1", "1Q"] {
                let response = try await FaultWire.get(server, "/bytes/1K?range-cap=" + value)
                #expect(response.status == 400)
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(body.contains("range-cap=\(value): expected a size above zero"), "\(body)")
                #expect(body.split(separator: "\n").count == 1, "\(body)")
            }
        }
    }
}
