import Foundation
import Testing

@testable import RangeServer

/// `/redirect-to?url=ABSOLUTE&status_code=30x` over the wire.
@Suite("Server over the wire: /redirect-to")
struct ServerRedirectToTests {
    @Test("redirects to the absolute URL given, with 302 by default or the status_code asked for")
    func redirects() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let other = "http://localhost:\(server.port)/bytes/1K?seed=2"
            let encoded = "http%3A%2F%2Flocalhost%3A\(server.port)%2Fbytes%2F1K%3Fseed%3D2"
            let found = try await FaultWire.get(server, "/redirect-to?url=" + encoded)
            #expect(found.status == 302)
            #expect(found.header("location") == other)
            for code in [301, 302, 303, 307, 308] {
                let response = try await FaultWire.get(server, "/redirect-to?url=\(encoded)&status_code=\(code)")
                #expect(response.status == code)
                #expect(response.header("location") == other)
            }
            let head = try await FaultWire.get(server, "/redirect-to?url=https://example.invalid/x", method: "HEAD")
            #expect(head.status == 302)
            #expect(head.header("location") == "https://example.invalid/x")
            let entry = try #require(try await FaultWire.entries(server, target: "/redirect-to?url=" + encoded).first)
            #expect(entry.status == 302)
            #expect(entry.responseHeaders["location"] == other)
        }
    }

    @Test(
        "a missing or non-absolute url, a bad status_code or an unknown parameter is a 400 naming it",
        arguments: [
            ("/redirect-to", "requires url"), ("/redirect-to?status_code=302", "requires url"),
            ("/redirect-to?url=/bytes/1K", "url=/bytes/1K"), ("/redirect-to?url=localhost:8080/x", "url=localhost"),
            ("/redirect-to?url=ftp://host/x", "url=ftp://host/x"), ("/redirect-to?url=http://", "url=http://"),
            ("/redirect-to?url=http:///path", "url=http:///path"),
            ("/redirect-to?url=http://a/%0D%0ASet-Cookie:x", "url=http://a/?Set-Cookie:x"),
            ("/redirect-to?url=http://a/&status_code=300", "status_code=300"),
            ("/redirect-to?url=http://a/&status_code=abc", "status_code=abc"),
            ("/redirect-to?url=http://a/&code=301", "code=301"),
            ("/redirect-to?url=http://a/&url=http://b/", "repeated query parameter url"),
        ]
    )
    func badRequests(target: String, named: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try await FaultWire.get(server, target)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.status == 400)
            #expect(text.contains(named), "\(text)")
            #expect(text.split(separator: "\n").count == 1)
            #expect(response.header("location") == nil)
        }
    }

    @Test("a scenario step's redirect-host makes the Location absolute on that host and the server's port")
    func scenarioRedirectHost() async throws {
        let directory = try FaultWire.temporaryDirectory("redirect-host")
        let scenario = """
            {
              "description": "Another origin.",
              "resource": "/bytes/4K",
              "attempts": [ { "redirect": "edge", "redirect-host": "localhost", "redirect-code": 307 },
                            { "redirect": "/bytes/1K", "redirect-host": "[::1]" } ],
              "routes": { "edge": { "attempts": [] } }
            }
            """
        try scenario.write(toFile: directory + "/origin.json", atomically: true, encoding: .utf8)
        try await withRangeServer(Fixtures.configuration { $0.scenariosDirectory = directory }) { server in
            let first = try await FaultWire.get(server, "/scenario/origin/r1")
            #expect(first.status == 307)
            #expect(first.header("location") == "http://localhost:\(server.port)/scenario/origin/r1/edge")
            let second = try await FaultWire.get(server, "/scenario/origin/r1")
            #expect(second.header("location") == "http://[::1]:\(server.port)/bytes/1K")
            let edge = try await FaultWire.get(server, "/scenario/origin/r1/edge")
            #expect(edge.status == 200)
            #expect(edge.body.count == 4096)
            let entries = await FaultWire.waitForJournal(server)
            let redirect = try #require(entries.first { $0.run == "r1" && $0.attempt == 1 && $0.route == "" })
            #expect(redirect.faults == ["redirect=edge", "redirect-host=localhost"])
        }
    }

    @Test("/redirect-to/extra is not a route")
    func extraSegments() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try await FaultWire.get(server, "/redirect-to/x?url=http://a/")
            #expect(response.status == 404)
        }
    }
}
