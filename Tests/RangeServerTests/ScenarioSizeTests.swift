import Foundation
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// A scenario step's `size`: the representation shrinks or grows between attempts. Loading, and the wire over plain
/// HTTP and TLS.
@Suite("Scenario step size")
struct ScenarioSizeTests {
    private func parse(_ text: String) throws -> Scenario {
        try Scenario.parse(Array(text.utf8), name: "sized", source: "sized.json")
    }

    /// The loader's one-line message for `text`, or nil when it loads.
    private func loadError(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("size parses as a size and holds from its attempt on, like version")
    func loads() throws {
        let scenario = try parse(
            """
            {"description": "x", "resource": "/bytes/4M?seed=3",
             "attempts": [ {"drop-after": "1M"}, {"size": "3M", "version": 2}, {}, {"size": 5242880} ]}
            """)
        let route = try #require(scenario.route(Scenario.mainRoute))
        #expect(route.attempts[1].size == 3 << 20)
        #expect(route.attempts[3].size == 5 << 20)
        #expect(route.effectiveSize(forAttempt: 1) == nil)
        #expect(route.effectiveSize(forAttempt: 2) == 3 << 20)
        #expect(route.effectiveSize(forAttempt: 3) == 3 << 20)
        #expect(route.effectiveSize(forAttempt: 9) == 5 << 20)
    }

    @Test("a bad size, or a size on a route serving a file, is refused with one line naming it")
    func refused() throws {
        let bad = try #require(
            loadError(#"{"description": "x", "resource": "/bytes/4M", "attempts": [ {"size": "3Q"} ]}"#))
        #expect(bad.contains("sized.json:1:") && bad.contains("attempts[0]: size=3Q: expected a size"), "\(bad)")
        let file = try #require(
            loadError(#"{"description": "x", "resource": "/files/sample.bin", "attempts": [ {"size": "1K"} ]}"#))
        #expect(file.contains("attempts[0]: size works on /bytes/ resources only"), "\(file)")
        #expect(file.contains("/files/sample.bin"), "\(file)")
        let route = try #require(
            loadError(
                #"{"description": "x", "resource": "/bytes/4M", "attempts": [ {"size": "1K"} ], "#
                    + #""routes": {"f": {"resource": "/files/a.bin", "attempts": [ {"size": 1} ]}}}"#))
        #expect(route.contains("routes.f.attempts[0]: size works on /bytes/ resources only"), "\(route)")
        for message in [bad, file, route] { #expect(!message.contains("\n"), "\(message)") }
    }

    @Test("the representation shrinks and grows between attempts, over http and https")
    func shrinksAndGrows() async throws {
        let directory = try FaultWire.temporaryDirectory("size-scenarios")
        let text = """
            {
              "description": "The file shrinks, then grows.",
              "resource": "/bytes/64K?seed=71",
              "attempts": [ { "drop-after": "16K" }, { "size": "48K", "version": 2 }, {}, { "size": "80K" } ]
            }
            """
        try text.write(toFile: directory + "/sized.json", atomically: true, encoding: .utf8)
        let configuration = Fixtures.configuration {
            $0.tlsPort = 0
            $0.scenariosDirectory = directory
        }
        try await withRangeServer(configuration) { server in
            let target = "/scenario/sized/run1"
            let first = try await FaultWire.get(server, target)
            #expect(first.header("content-length") == "65536")
            #expect(first.body.count == 16_384)
            // The resume past the new end: 416 with the new length.
            let past = try await FaultWire.get(server, target, headers: ["Range": "bytes=50000-"])
            #expect(past.status == 416)
            #expect(past.header("content-range") == "bytes */49152")
            // HEAD looks at the next attempt: the shrunk version 2.
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.header("content-length") == "49152")
            let port = try #require(server.tlsPort)
            let trust = try #require(server.certificateAuthorityPEM)
            let secure = try await TLSProbe.get(port: port, target: target, trustPEM: trust)
            #expect(secure.body == FaultWire.expected(seed: 71, version: 2, count: 49_152))
            let grown = try await FaultWire.get(server, target, headers: ["Range": "bytes=49152-"])
            #expect(grown.status == 206)
            #expect(grown.header("content-range") == "bytes 49152-81919/81920")
            #expect(grown.body == FaultWire.expected(seed: 71, version: 2, offset: 49_152, count: 32_768))
            let secureGrown = try await TLSProbe.get(
                port: port, target: target, trustPEM: trust, headers: ["Range": "bytes=0-9"])
            #expect(String(decoding: secureGrown.bytes, as: UTF8.self).contains("Content-Range: bytes 0-9/81920"))
        }
    }
}
