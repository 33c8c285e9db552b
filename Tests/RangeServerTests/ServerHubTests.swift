import Foundation
import Testing

@testable import RangeServer

/// `/_hub/{target}/{org}/{repo}/resolve/{revision}/{file}`: the Hugging Face Hub's resolve URL standing in, over the
/// wire.
@Suite("Server over the wire: /_hub")
struct ServerHubTests {
    static func encoded(_ target: String) -> String {
        Data(target.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test(
        "HEAD and GET answer a 302 to the target with the hub's fields, the truth without the row's faults, and spend no attempt"
    )
    func scenarioTarget() async throws {
        let directory = try FaultWire.temporaryDirectory("hub")
        let scenario = """
            {
              "description": "A drop, then a lying ETag.",
              "resource": "/bytes/64K?seed=3",
              "attempts": [ { "drop-after": "16K" }, { "etag-salt": "lie" } ]
            }
            """
        try scenario.write(toFile: directory + "/cdn.json", atomically: true, encoding: .utf8)
        try await withRangeServer(Fixtures.configuration { $0.scenariosDirectory = directory }) { server in
            let plain = try await FaultWire.get(server, "/bytes/64K?seed=3")
            let target = "/scenario/cdn/r1"
            let hub = "/_hub/\(Self.encoded(target))/rangecheck/catalogue/resolve/main/file.bin"
            for method in ["HEAD", "GET", "HEAD"] {
                let answer = try await FaultWire.get(server, hub, method: method)
                #expect(answer.status == 302)
                // Another origin of this server: the client reads the hub's fields from the 302 only then.
                #expect(answer.header("location") == "http://localhost:\(server.port)\(target)")
                #expect(answer.header("x-linked-size") == "65536")
                #expect(answer.header("x-linked-etag") == plain.header("etag"))
                #expect(answer.header("etag") == plain.header("etag"))
                let commit = try #require(answer.header("x-repo-commit"))
                #expect(commit.count == 40 && commit.allSatisfy(\.isHexDigit), "\(commit)")
            }
            // The hub looked three times; the CDN's first GET still meets the first step.
            let first = try await FaultWire.get(server, target)
            #expect(first.body.count < 65536)
            let again = try await FaultWire.get(
                server, "/_hub/\(Self.encoded(target))/rangecheck/catalogue/resolve/main/file.bin", method: "HEAD")
            #expect(again.header("x-linked-etag") == plain.header("etag"), "the hub does not take the step's lie")
        }
    }

    @Test("a /bytes target keeps its resource parameters and drops its faults; a bad target is a 400 in one line")
    func resourceTargets() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/8K?seed=9&drop-after=1K"
            let answer = try await FaultWire.get(
                server, "/_hub/\(Self.encoded(target))/o/r/resolve/main/dir/file.bin", method: "HEAD")
            #expect(answer.status == 302)
            #expect(answer.header("x-linked-size") == "8192")
            let named = try await FaultWire.get(
                server, "/_hub/\(Self.encoded(target))/o/r/resolve/main/f", headers: ["Host": "localhost:1"])
            #expect(named.header("location") == "http://127.0.0.1:\(server.port)\(target)")
            let plain = try await FaultWire.get(server, "/bytes/8K?seed=9", method: "HEAD")
            #expect(answer.header("x-linked-etag") == plain.header("etag"))
            for (path, status, named) in [
                ("/_hub/!!!/o/r/resolve/main/f", 400, "is not the base64url of a path"),
                ("/_hub/\(Self.encoded("/redirect-loop"))/o/r/resolve/main/f", 400, "is not a /scenario, /bytes"),
                ("/_hub/\(Self.encoded("/bytes/xyz"))/o/r/resolve/main/f", 400, "size 'xyz'"),
                ("/_hub/\(Self.encoded("/scenario/none/r"))/o/r/resolve/main/f", 404, "not found"),
                ("/_hub/\(Self.encoded("/bytes/1K"))/o/r/blob/main/f", 404, "expected /_hub/TARGET"),
            ] {
                let response = try await FaultWire.get(server, path)
                let text = String(decoding: response.body, as: UTF8.self)
                #expect(response.status == status, "\(path): \(text)")
                #expect(text.contains(named), "\(path): \(text)")
                #expect(text.split(separator: "\n").count == 1)
            }
        }
    }
}
