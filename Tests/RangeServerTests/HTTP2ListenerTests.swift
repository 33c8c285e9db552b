import Crypto
import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// The HTTP/2 listeners (`--h2-port`, `--h2c-port`) against an independent client (`H2Probe`, Python's h2): every
/// route answers as over HTTP/1.1, the journal says which protocol, connection and stream, NIOHTTP2's own checks do
/// not stop a lie, bodies follow the client's window, and `bodyBytesSent` counts what reached the socket.
@Suite("HTTP/2 listener", .timeLimit(.minutes(3)))
struct HTTP2ListenerTests {
    private func configuration(
        _ change: (inout RangeServer.Configuration) -> Void = { _ in }
    ) -> RangeServer.Configuration {
        Fixtures.configuration {
            $0.h2Port = 0
            $0.h2cPort = 0
            $0.customRoutes = [CustomRoute(prefix: "/_custom/") { request in .text(200, "custom \(request.path)") }]
            change(&$0)
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The fields a route plans, as both wires carry them: lower-case names, without the framing and Date fields
    /// each front end writes itself.
    private static func planned(_ fields: [(name: String, value: String)]) -> [String] {
        let framing: Set<String> = ["date", "content-length", "transfer-encoding", "connection", "keep-alive"]
        return fields.map { ($0.name.lowercased(), $0.value) }.filter { !framing.contains($0.0) }.map {
            "\($0.0): \($0.1)"
        }
    }

    @Test("a file rewritten between two h2c connections' requests is served as it is now, not as cached")
    func rewriteBetweenConnections() async throws {
        let directory = NSTemporaryDirectory() + "h2-rewrite-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/data.txt"
        try "first\n".write(toFile: path, atomically: false, encoding: .utf8)
        try await withRangeServer(configuration { $0.root = directory }) { server in
            let port = try #require(server.h2cPort)
            let first = try await H2Probe.run(port: port, requests: ["/files/data.txt"]).stream(0)
            #expect(first.bytes == 6)
            // In place (the same file): only the change watch, or a stat it calls for, can tell the cache.
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.write(contentsOf: Data("second version\n".utf8))
            try handle.close()
            let second = try await H2Probe.run(port: port, requests: ["/files/data.txt"]).stream(0)
            #expect(second.status == 200)
            #expect(second.bytes == 15)
            #expect(second.sha256 == Self.hex(Array("second version\n".utf8)))
        }
    }

    @Test("every route answers over h2c as over HTTP/1.1: status, planned fields, body bytes")
    func routesAgree() async throws {
        try await withRangeServer(configuration()) { server in
            let targets = [
                "/bytes/1M", "/bytes/1M|range=bytes=100-199", "/bytes/64K?seed=7&version=2", "/files/hello.txt",
                "/files/sample.bin|range=bytes=0-9", "/files/missing.bin", "/redirect/2/bytes/1K", "/redirect-loop",
                "/redirect-to?url=http%3A%2F%2F127.0.0.1%2Fx&status_code=307", "/healthz", "/", "/_custom/path",
                "/scenario/not-found-404/RUN/", "/scenario/plain/RUN/", "/bytes/1M|if-none-match=\"b100000-0-v1\"",
                "/bytes/10|range=bytes=20-30",
            ]
            let h2 = try await H2Probe.run(
                port: try #require(server.h2cPort),
                requests: targets.map { $0.replacingOccurrences(of: "RUN", with: "agree-h2") })
            #expect(h2.errors.isEmpty, "\(h2.errors)")
            for (index, target) in targets.enumerated() {
                let parts = target.split(separator: "|").map(String.init)
                var headers: [String: String] = [:]
                for field in parts.dropFirst() {
                    let pair = field.split(separator: "=", maxSplits: 1).map(String.init)
                    headers[pair[0]] = pair[1]
                }
                // The h1 twin of a scenario request runs under its own run, so both meet attempt 1.
                let h1 = try rawRequest(
                    port: server.port, "GET", parts[0].replacingOccurrences(of: "RUN", with: "agree-h1"),
                    headers: headers)
                let stream = try h2.stream(index)
                #expect(stream.status == h1.status, "\(target)")
                #expect(
                    stream.sha256 == Self.hex(h1.body),
                    "\(target): \(stream.bytes) bytes over h2, \(h1.body.count) over h1")
                #expect(
                    Self.planned(stream.headers.map { ($0[0], $0[1]) }) == Self.planned(h1.headers), "\(target)")
                // libmicrohttpd 0.9.75 gives a 304 `Content-Length: 0`, a length its 200 does not have (RFC 9110
                // §8.6); over HTTP/2 a 304 carries none.
                if h1.status != 304 {
                    #expect(stream.header("content-length") == h1.header("content-length"), "\(target)")
                } else {
                    #expect(stream.header("content-length") == nil)
                }
                #expect(stream.endStream, "\(target)")
            }
        }
    }

    @Test("the journal records h2, the connection, each stream, and ALPN's offer and choice")
    func journalFields() async throws {
        try await withRangeServer(configuration()) { server in
            let tls = try await H2Probe.run(
                port: try #require(server.h2Port), tls: server, requests: ["/bytes/1K", "/bytes/2K", "/bytes/3K"])
            #expect(tls.alpn == "h2")
            let clear = try await H2Probe.run(port: try #require(server.h2cPort), requests: ["/bytes/4K"])
            #expect(clear.alpn == nil)
            _ = try rawRequest(port: server.port, "GET", "/bytes/5K")
            // Every exchange is journaled once its end is seen; a quiet server has them all.
            let settled = await server.journal.settled(run: nil, timeout: .seconds(scaled(seconds: 10)))
            let entries = settled.entries.sorted { $0.arrival < $1.arrival }
            try #require(entries.count == 5)
            let overTLS = entries.prefix(3)
            #expect(overTLS.allSatisfy { $0.httpProtocol == "h2" && $0.tls && $0.alpn == "h2" })
            #expect(overTLS.allSatisfy { $0.alpnOffered == ["h2"] })
            #expect(Set(overTLS.map(\.connection)).count == 1, "one connection for the three streams")
            #expect(overTLS.map { $0.stream ?? 0 }.sorted() == [1, 3, 5])
            #expect(overTLS.map(\.bodyBytesSent).sorted() == [1024, 2048, 3072])
            #expect(
                entries[3].httpProtocol == "h2" && !entries[3].tls && entries[3].alpn == nil && entries[3].stream == 1)
            #expect(entries[3].connection != entries[0].connection)
            #expect(entries[4].httpProtocol == "h1" && entries[4].stream == nil && entries[4].alpn == nil)
            #expect(entries[0].requestHeaders["host"] == "127.0.0.1:\(server.h2Port!)", ":authority is the host")
            // The JSON keys, as the control API writes them.
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(entries[0].jsonBytes)) as? [String: Any])
            #expect(object["protocol"] as? String == "h2" && object["stream"] as? Int == entries[0].stream)
            #expect(object["alpnOffered"] as? [String] == ["h2"])
        }
    }

    @Test("a client that chooses http/1.1 on the h2 port gets 421 with one line, and is journaled")
    func http1On2PortIs421() async throws {
        try await withRangeServer(configuration()) { server in
            let report = try await H2Probe.http1(port: try #require(server.h2Port), server: server, target: "/bytes/1K")
            #expect(report.alpn == "http/1.1")
            #expect(report.http1.hasPrefix("HTTP/1.1 421 "))
            let body = try #require(report.http1.components(separatedBy: "\r\n\r\n").last)
            #expect(body.filter { $0 == "\n" }.count == 1 && body.contains("--tls-port"), "\(body)")
            let entry = try #require(server.journal.entries().last)
            #expect(entry.status == 421 && entry.httpProtocol == "h1" && entry.alpn == "http/1.1")
            #expect(entry.alpnOffered == ["http/1.1"] && entry.target == "/bytes/1K" && entry.tls)
        }
    }

    @Test("NIOHTTP2's checks do not stop a lie: a lying Content-Length, a malformed Content-Range, a raw field")
    func liesReachTheClient() async throws {
        try await withRangeServer(configuration()) { server in
            let report = try await H2Probe.run(
                port: try #require(server.h2cPort),
                requests: [
                    "/bytes/1M?length-delta=100", "/bytes/1M?length-delta=-100",
                    "/bytes/1K?content-range=bytes%3D0-99/50|range=bytes=0-99", "/bytes/1K?header=X-Raw:%20a%01b%20",
                    "/bytes/1K?header=Content-Range:bytes%200-1/2&header=content-range:bytes%203-4/5",
                ])
            let longer = try report.stream(0)
            #expect(longer.header("content-length") == "1048676" && longer.bytes == 1_048_576 && longer.endStream)
            let shorter = try report.stream(1)
            #expect(shorter.header("content-length") == "1048476" && shorter.bytes == 1_048_576 && shorter.endStream)
            let range = try report.stream(2)
            #expect(range.status == 206 && range.header("content-range") == "bytes=0-99/50" && range.bytes == 100)
            #expect(try report.stream(3).header("x-raw") == "a\u{1}b ")
            let twice = try report.stream(4).headers.filter { $0[0] == "content-range" }.map { $0[1] }
            #expect(twice == ["bytes 0-1/2", "bytes 3-4/5"])
        }
    }

    @Test("bodies follow the client's flow-control window, and a file body arrives whole and right")
    func flowControl() async throws {
        try await withRangeServer(configuration()) { server in
            // The smallest window a client can have: 64 KiB for the connection and the stream.
            let report = try await H2Probe.run(
                port: try #require(server.h2cPort), requests: ["/bytes/4M", "/files/sample.bin"],
                options: ["--window", "65535"])
            let generated = try report.stream(0)
            #expect(generated.bytes == 4 << 20 && generated.endStream)
            let h1 = try rawRequest(port: server.port, "GET", "/bytes/4M")
            #expect(generated.sha256 == Self.hex(h1.body))
            let file = try report.stream(1)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.files + "/sample.bin")))
            #expect(file.sha256 == Self.hex(bytes) && file.endStream)
        }
    }

    @Test("bodyBytesSent over h2 is the DATA written to the socket, within 200 KiB of what the client took")
    func bodyBytesSent() async throws {
        try await withRangeServer(configuration()) { server in
            // The client grants no more window after 1 MiB and leaves at its timeout.
            let report = try await H2Probe.run(
                port: try #require(server.h2cPort), requests: ["/bytes/64M"],
                options: ["--window", String(1 << 20), "--read-limit", String(1 << 20)], timeout: 3)
            let received = try report.stream(0).bytes
            #expect(received >= 1 << 20 && received < 64 << 20)
            let settled = await server.journal.settled(run: nil, timeout: .seconds(scaled(seconds: 10)))
            #expect(settled.settled)
            let entry = try #require(server.journal.entries().last)
            #expect(entry.outcome == .clientClosed && entry.abandoned)
            let difference = abs(Int(entry.bodyBytesSent) - received)
            #expect(difference <= 200 * 1024, "sent \(entry.bodyBytesSent), received \(received)")
        }
    }

    @Test("the listening lines and the URLs name the HTTP/2 ports")
    func urls() async throws {
        try await withRangeServer(configuration()) { server in
            let h2Port = try #require(server.h2Port)
            let h2cPort = try #require(server.h2cPort)
            #expect(server.h2BaseURL == "https://127.0.0.1:\(h2Port)")
            #expect(server.h2cBaseURL == "http://127.0.0.1:\(h2cPort)")
            #expect(server.certificateAuthorityPath != nil, "the h2 port brings the TLS material")
        }
        try await withRangeServer(Fixtures.configuration()) { server in
            #expect(server.h2Port == nil && server.h2cPort == nil && server.h2BaseURL == nil)
        }
    }

    @Test("a bad HTTP/2 port is refused with one line naming the option")
    func badPort() {
        #expect(throws: RangeServerError.self) { try RangeServer.start(Fixtures.configuration { $0.h2Port = 70000 }) }
        do {
            _ = try RangeServer.start(Fixtures.configuration { $0.h2cPort = -1 })
            Issue.record("accepted --h2c-port -1")
        } catch {
            #expect("\(error)".contains("--h2c-port must be from 0 to 65535, got -1"))
            #expect(!"\(error)".contains("\n"))
        }
    }
}
