import AsyncHTTPClient
import Foundation
import RangeServer
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Helpers shared by the `Server*Tests` files: independent parsing of what the server puts on the wire.
enum WireCheck {
    /// Seconds since 1970 for an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), parsed field by field.
    static func seconds(fromHTTPDate text: String) -> Int? {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let days = ["Sun,", "Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,"]
        let fields = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 6, days.contains(fields[0]), fields[1].count == 2, let day = Int(fields[1]),
            let month = months.firstIndex(of: fields[2]), fields[3].count == 4, let year = Int(fields[3]),
            fields[5] == "GMT"
        else { return nil }
        let clock = fields[4].split(separator: ":").map { Int($0) }
        guard fields[4].count == 8, clock.count == 3, let hour = clock[0], let minute = clock[1], let second = clock[2]
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        // The weekday must agree with the date, and the fields must not have been normalised.
        guard days[Int(parts.tm_wday)] == fields[0], parts.tm_mday == Int32(day) else { return nil }
        return seconds
    }

    /// The IMF-fixdate for `seconds` since 1970, formatted with the C library.
    static func httpDate(seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The generated content of `/bytes` from the public reference generator.
    static func reference(seed: UInt64 = 0, version: UInt64 = 1, offset: UInt64, count: Int) -> [UInt8] {
        ContentGenerator(seed: seed, version: version).bytes(offset: offset, count: count)
    }

    /// One part of a `multipart/byteranges` body.
    struct Part {
        var headers: [String: String]
        var payload: [UInt8]
    }

    /// The `boundary` parameter of a `multipart/byteranges` Content-Type, unquoted.
    static func boundary(fromContentType value: String) -> String? {
        let pieces = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/byteranges" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            var boundary = String(piece.dropFirst("boundary=".count))
            if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 {
                boundary = String(boundary.dropFirst().dropLast())
            }
            return boundary
        }
        return nil
    }

    /// Splits a `multipart/byteranges` body (RFC 2046) into parts; throws unless it ends with the close delimiter
    /// followed by at most a CRLF.
    static func parts(of body: [UInt8], boundary: String) throws -> [Part] {
        let delimiter = Array("--\(boundary)".utf8)
        let crlf: [UInt8] = [13, 10]
        // The first delimiter may open the body or follow a preamble that ends with CRLF.
        guard var position = find(delimiter, in: body, from: 0),
            position == 0 || Array(body[position - 2..<position]) == crlf
        else { throw RawHTTPError("no opening delimiter") }
        var parts: [Part] = []
        while true {
            position += delimiter.count
            if Array(body[position..<min(position + 2, body.count)]) == Array("--".utf8) {
                let rest = Array(body[(position + 2)...])
                guard rest.isEmpty || rest == crlf else {
                    throw RawHTTPError("\(rest.count) bytes after the close delimiter")
                }
                return parts
            }
            guard Array(body[position..<min(position + 2, body.count)]) == crlf else {
                throw RawHTTPError("delimiter not followed by CRLF")
            }
            position += 2
            guard let headerEnd = find([13, 10, 13, 10], in: body, from: position) else {
                throw RawHTTPError("part headers do not end")
            }
            var headers: [String: String] = [:]
            let headerText = String(decoding: body[position..<headerEnd], as: UTF8.self)
            for line in headerText.components(separatedBy: "\r\n") where !line.isEmpty {
                guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError("bad part header '\(line)'") }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            let payloadStart = headerEnd + 4
            guard let next = find(crlf + delimiter, in: body, from: payloadStart) else {
                throw RawHTTPError("part payload does not end")
            }
            parts.append(Part(headers: headers, payload: Array(body[payloadStart..<next])))
            position = next + 2
        }
    }

    private static func find(_ pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !pattern.isEmpty, bytes.count >= pattern.count, start <= bytes.count - pattern.count else { return nil }
        var index = start
        while index <= bytes.count - pattern.count {
            if bytes[index] == pattern[0] && bytes[index..<index + pattern.count].elementsEqual(pattern) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// Sends `text` as it is on a fresh connection and reads one response.
    static func exchange(port: Int, _ text: String, isHead: Bool = false) throws -> RawHTTPConnection.Response {
        let connection = try RawHTTPConnection(port: port)
        try connection.send(text)
        return try connection.readResponse(isHead: isHead)
    }

    /// The path and query of a Location value, absolute or relative.
    static func pathAndQuery(of location: String) -> String {
        guard let scheme = location.range(of: "://") else { return location }
        let rest = location[scheme.upperBound...]
        return rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
    }

    /// The journal once the server has answered every request it has read (`Journal.settled`, at most 10 s stretched
    /// by the time scale: a deadline); `count` is what the caller expects.
    static func journalEntries(_ server: RangeServer, count: Int) async throws -> [JournalEntry] {
        await server.journal.settled(timeout: scaled(.seconds(10))).entries
    }
}

@Suite("Server over the wire: routing, methods, redirects, headers, keep-alive")
struct ServerHTTPTests {
    // MARK: - Date

    @Test("every response carries one Date of now: ours on routed responses, libmicrohttpd's on its own")
    func dateOnEveryResponse() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let etag = try #require(try rawRequest(port: server.port, "GET", "/bytes/1K").header("etag"))
            let requests: [(method: String, target: String, headers: [String: String], status: Int)] = [
                ("GET", "/bytes/4K", [:], 200),
                ("GET", "/bytes/4K", ["Range": "bytes=10-19"], 206),
                ("GET", "/bytes/4K", ["Range": "bytes=0-0,9-9"], 206),
                ("HEAD", "/bytes/4K", [:], 200),
                ("GET", "/bytes/1K", ["If-None-Match": etag], 304),
                ("GET", "/bytes/4K", ["Range": "bytes=9000-"], 416),
                ("GET", "/nowhere", [:], 404),
                ("POST", "/bytes/1K", [:], 405),
                ("GET", "/redirect/1/bytes/1K", [:], 302),
                ("GET", "/bytes/1K?status=503", [:], 503),
                ("GET", "/bytes/1K?delay=10ms", [:], 200),
            ]
            for request in requests {
                let before = Int(Date().timeIntervalSince1970)
                let response = try rawRequest(
                    port: server.port, request.method, request.target, headers: request.headers)
                let after = Int(Date().timeIntervalSince1970)
                let label = "\(request.method) \(request.target) \(request.headers)"
                #expect(response.status == request.status, "\(label)")
                #expect(response.headers.filter { $0.name.lowercased() == "date" }.count == 1, "\(label)")
                let seconds = try #require(WireCheck.seconds(fromHTTPDate: response.header("date") ?? ""), "\(label)")
                #expect(seconds >= before && seconds <= after, "\(label): \(response.header("date") ?? "")")
            }
            // Keep-alive: each response on one connection is dated, across a change of second. The second request
            // waits for the wall clock to pass the first response's second (a deadline would fail under load).
            let connection = try RawHTTPConnection(port: server.port)
            try connection.request("GET", "/bytes/1K", headers: ["Range": "bytes=0-9"])
            let first = try #require(
                WireCheck.seconds(fromHTTPDate: try connection.readResponse().header("date") ?? ""))
            let wait = Double(first + 1) - Date().timeIntervalSince1970
            try await Task.sleep(for: .milliseconds(max(0, Int(wait * 1000)) + 50))
            try connection.request("GET", "/bytes/1K", headers: ["Range": "bytes=0-9"])
            let later = try connection.readResponse()
            let second = try #require(WireCheck.seconds(fromHTTPDate: later.header("date") ?? ""))
            #expect(second > first, "the Date value moved on with the clock")
            #expect(second <= Int(Date().timeIntervalSince1970))
            // A request libmicrohttpd rejects itself still gets its Date.
            let malformed = try RawHTTPConnection(port: server.port)
            try malformed.send("GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n")
            let rejected = try malformed.readResponse()
            #expect(rejected.status == 400)
            #expect(WireCheck.seconds(fromHTTPDate: rejected.header("date") ?? "") != nil)
        }
    }

    // MARK: - Index, health, methods, unknown paths

    @Test("GET / is HTML for Accept: text/html and lists endpoints, fixture files and scenarios")
    func indexHTML() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try rawRequest(
                port: server.port, "GET", "/", headers: ["Accept": "text/html,application/xhtml+xml"])
            #expect(response.status == 200)
            #expect(response.header("content-type")?.hasPrefix("text/html") == true)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.lowercased().contains("<html"))
            for needle in ["/bytes/", "/files/", "/redirect/", "/redirect-loop", "/healthz"] {
                #expect(body.contains(needle), "index lacks \(needle)")
            }
            for file in ["hello.txt", "sample.bin", "docs/info.json"] {
                #expect(body.contains("/files/\(file)"), "index lacks \(file)")
            }
            #expect(!server.scenarios.isEmpty)
            for name in server.scenarios.keys {
                #expect(body.contains(name), "index lacks scenario \(name)")
            }
        }
    }

    @Test("GET / is plain text without text/html in Accept, with the same listing")
    func indexPlain() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for headers in [[:], ["Accept": "*/*"], ["Accept": "text/plain"]] {
                let response = try rawRequest(port: server.port, "GET", "/", headers: headers)
                #expect(response.status == 200)
                #expect(response.header("content-type")?.hasPrefix("text/plain") == true)
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(!body.lowercased().contains("<html"))
                for needle in [
                    "/bytes/", "/files/", "/redirect/", "/healthz", "hello.txt", "sample.bin", "docs/info.json",
                ] {
                    #expect(body.contains(needle), "plain index lacks \(needle)")
                }
                for name in server.scenarios.keys {
                    #expect(body.contains(name), "plain index lacks scenario \(name)")
                }
            }
        }
    }

    @Test("GET /healthz answers 200 ok")
    func healthz() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try rawRequest(port: server.port, "GET", "/healthz")
            #expect(response.status == 200)
            #expect(
                String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        }
    }

    @Test("POST, PUT and DELETE on a resource answer 405 with Allow: GET, HEAD")
    func methodNotAllowed() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for target in ["/bytes/1K", "/files/hello.txt", "/healthz", "/"] {
                for method in ["POST", "PUT", "DELETE"] {
                    let response = try rawRequest(port: server.port, method, target, headers: ["Content-Length": "0"])
                    #expect(response.status == 405, "\(method) \(target)")
                    #expect(response.header("allow") == "GET, HEAD", "\(method) \(target)")
                    #expect(response.header("content-range") == nil)
                }
            }
        }
    }

    @Test("unknown paths answer 404")
    func unknownPaths() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let targets = [
                "/nope", "/bytes", "/bytes/1K/extra", "/files/", "/files/missing.txt", "/healthz/x", "/redirect/1",
                "/redirect-loop/x", "/index.html",
            ]
            for target in targets {
                let response = try rawRequest(port: server.port, "GET", target)
                #expect(response.status == 404, "\(target)")
                #expect(response.ending == .complete)
            }
        }
    }

    // MARK: - Redirects

    /// Follows redirects from `target` with the raw client and returns every response, the last one not a redirect.
    private func follow(
        port: Int, _ target: String, limit: Int = 20
    ) throws -> [(target: String, response: RawHTTPConnection.Response)] {
        var current = target
        var chain: [(target: String, response: RawHTTPConnection.Response)] = []
        for _ in 0..<limit {
            let response = try WireCheck.exchange(
                port: port, "GET \(current) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
            )
            chain.append((current, response))
            guard (300..<400).contains(response.status), let location = response.header("location") else {
                return chain
            }
            current = WireCheck.pathAndQuery(of: location)
        }
        return chain
    }

    @Test("/redirect/{n}/{target} takes n relative 302 hops by default, then serves /{target} with the query")
    func redirectDefault() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let chain = try follow(port: server.port, "/redirect/3/bytes/1K?seed=5")
            try #require(chain.count == 4)
            for hop in chain.dropLast() {
                #expect(hop.response.status == 302)
                let location = try #require(hop.response.header("location"))
                #expect(location.hasPrefix("/"), "relative by default: \(location)")
            }
            #expect(chain[1].target.hasPrefix("/redirect/2/bytes/1K?"))
            #expect(chain[2].target.hasPrefix("/redirect/1/bytes/1K?"))
            #expect(chain[3].target == "/bytes/1K?seed=5")
            #expect(chain[3].response.status == 200)
            #expect(chain[3].response.body == WireCheck.reference(seed: 5, offset: 0, count: 1024))
        }
    }

    @Test("a redirect without a query ends at the bare target", arguments: ["files/hello.txt", "healthz"])
    func redirectBareTarget(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let chain = try follow(port: server.port, "/redirect/1/\(target)")
            try #require(chain.count == 2)
            #expect(chain[0].response.header("location") == "/\(target)")
            #expect(chain[1].response.status == 200)
        }
    }

    @Test("redirect-code applies to every hop and is not passed on", arguments: [301, 302, 303, 307, 308])
    func redirectCodes(code: Int) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let chain = try follow(port: server.port, "/redirect/2/bytes/2K?redirect-code=\(code)&version=2")
            try #require(chain.count == 3)
            #expect(chain[0].response.status == code)
            #expect(chain[1].response.status == code)
            #expect(chain[2].target == "/bytes/2K?version=2")
            #expect(chain[2].response.status == 200)
            #expect(chain[2].response.body == WireCheck.reference(version: 2, offset: 0, count: 2048))
        }
    }

    @Test("redirect-location=absolute makes every hop absolute, from the Host header, and is not passed on")
    func redirectAbsolute() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let chain = try follow(
                port: server.port, "/redirect/3/bytes/512?redirect-location=absolute&redirect-code=307&seed=9"
            )
            try #require(chain.count == 4)
            for hop in chain.dropLast() {
                #expect(hop.response.status == 307)
                let location = try #require(hop.response.header("location"))
                #expect(location.hasPrefix("http://127.0.0.1:\(server.port)/"), "\(location)")
            }
            #expect(chain[3].target == "/bytes/512?seed=9")
            #expect(chain[3].response.body == WireCheck.reference(seed: 9, offset: 0, count: 512))
        }
    }

    @Test("an absolute redirect without a Host header names the bound address and port")
    func redirectAbsoluteWithoutHost() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try WireCheck.exchange(
                port: server.port, "GET /redirect/1/healthz?redirect-location=absolute HTTP/1.0\r\n\r\n"
            )
            #expect(response.status == 302)
            #expect(response.header("location") == "http://127.0.0.1:\(server.port)/healthz")
        }
    }

    @Test("/redirect-loop redirects to itself with hop=N+1, forever")
    func redirectLoop() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let chain = try follow(port: server.port, "/redirect-loop", limit: 6)
            #expect(chain.count == 6)
            #expect(chain.allSatisfy { $0.response.status == 302 })
            #expect(chain.map(\.target) == ["/redirect-loop"] + (1...5).map { "/redirect-loop?hop=\($0)" })
            #expect(chain.last?.response.header("location") == "/redirect-loop?hop=6")
        }
    }

    // MARK: - Headers, HEAD, keep-alive

    @Test(
        "200 and 206 carry Accept-Ranges, ETag, Last-Modified, Content-Length and Date",
        arguments: ["/bytes/64K", "/files/sample.bin", "/files/hello.txt"]
    )
    func standardHeaders(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let full = try rawRequest(port: server.port, "GET", target)
            let partial = try rawRequest(port: server.port, "GET", target, headers: ["Range": "bytes=10-19"])
            #expect(full.status == 200)
            #expect(partial.status == 206)
            for response in [full, partial] {
                #expect(response.header("accept-ranges") == "bytes")
                #expect(response.header("etag")?.hasPrefix("\"") == true)
                let lastModified = try #require(response.header("last-modified"))
                #expect(WireCheck.seconds(fromHTTPDate: lastModified) != nil, "Last-Modified '\(lastModified)'")
                #expect(response.header("content-length") == String(response.body.count))
                let date = try #require(response.header("date"))
                let seconds = try #require(WireCheck.seconds(fromHTTPDate: date), "Date '\(date)'")
                #expect(abs(seconds - Int(time(nil))) < 60)
                #expect(response.ending == .complete)
            }
            #expect(partial.body.count == 10)
            #expect(full.header("etag") == partial.header("etag"))
            #expect(full.header("last-modified") == partial.header("last-modified"))
        }
    }

    @Test("HEAD answers the headers of GET and no body", arguments: ["/bytes/1M?seed=3", "/files/sample.bin", "/"])
    func headMatchesGet(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.request("HEAD", target)
            let head = try connection.readResponse(isHead: true)
            // Any stray body bytes after HEAD would be read as the next status line.
            try connection.request("GET", target)
            let get = try connection.readResponse()
            #expect(head.status == 200)
            #expect(get.status == 200)
            #expect(get.ending == .complete)
            #expect(head.headerNames.subtracting(["date"]) == get.headerNames.subtracting(["date"]))
            for name in get.headerNames.subtracting(["date"]) {
                #expect(head.header(name) == get.header(name), "\(name)")
            }
            #expect(head.header("content-length") == String(get.body.count))
        }
    }

    @Test("HEAD ignores Range: 200 with the full length and no Content-Range")
    func headIgnoresRange() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for target in ["/bytes/1M", "/files/sample.bin"] {
                let response = try rawRequest(port: server.port, "HEAD", target, headers: ["Range": "bytes=0-9"])
                #expect(response.status == 200)
                #expect(response.header("content-range") == nil)
                #expect(response.header("content-length") != "10")
            }
        }
    }

    @Test("one raw connection answers three requests in a row, all on one journal connection id")
    func keepAliveRaw() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let connection = try RawHTTPConnection(port: server.port)
            let targets = ["/bytes/10K", "/files/hello.txt", "/bytes/20K?seed=1"]
            var responses: [RawHTTPConnection.Response] = []
            for target in targets {
                try connection.request("GET", target)
                responses.append(try connection.readResponse())
            }
            #expect(responses.map(\.status) == [200, 200, 200])
            #expect(responses.map(\.ending) == [.complete, .complete, .complete])
            #expect(responses[0].body == WireCheck.reference(offset: 0, count: 10240))
            #expect(responses[2].body == WireCheck.reference(seed: 1, offset: 0, count: 20480))
            #expect(responses.allSatisfy { $0.header("connection")?.lowercased() != "close" })

            _ = try rawRequest(port: server.port, "GET", "/healthz")
            let entries = try await WireCheck.journalEntries(server, count: 4)
            let ids = targets.compactMap { target in entries.first { $0.target == target }?.connection }
            #expect(ids.count == 3)
            #expect(Set(ids).count == 1)
            let other = try #require(entries.first { $0.target == "/healthz" })
            #expect(other.connection != ids.first)
        }
    }

    @Test("pipelined requests are answered in order on one connection")
    func pipelining() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let connection = try RawHTTPConnection(port: server.port)
            var text = ""
            for size in [100, 200, 300] { text += "GET /bytes/\(size) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" }
            try connection.send(text)
            for size in [100, 200, 300] {
                let response = try connection.readResponse()
                #expect(response.status == 200)
                #expect(response.body == WireCheck.reference(offset: 0, count: size))
            }
        }
    }

    @Test("a request body sent with a refused method is discarded and the connection stays usable")
    func discardedRequestBody() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send("POST /bytes/1K HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 11\r\n\r\nGET /x HTTP")
            let refused = try connection.readResponse()
            #expect(refused.status == 405)
            #expect(refused.header("allow") == "GET, HEAD")
            try connection.request("GET", "/bytes/1K", close: true)
            let next = try connection.readResponse()
            #expect(next.status == 200)
            #expect(next.body == WireCheck.reference(offset: 0, count: 1024))
        }
    }

    @Test("AsyncHTTPClient reuses one keep-alive connection for sequential requests")
    func keepAliveClient() async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await withRangeServer(Fixtures.configuration()) { server in
                for index in 0..<4 {
                    let request = HTTPClientRequest(url: server.baseURL + "/bytes/4K?seed=\(index)")
                    let response = try await client.execute(request, timeout: .init(scaled(.seconds(10))))
                    #expect(response.status.code == 200)
                    let body = try await response.body.collect(upTo: 1 << 20)
                    #expect(
                        Array(body.readableBytesView)
                            == WireCheck.reference(seed: UInt64(index), offset: 0, count: 4096))
                }
                let entries = try await WireCheck.journalEntries(server, count: 4)
                #expect(entries.count == 4)
                #expect(Set(entries.map(\.connection)).count == 1)
            }
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
