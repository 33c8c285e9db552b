import Foundation
import RangeServer
import Testing

/// The validators a resource advertises, read from a plain HEAD.
private struct Validators {
    var etag: String
    var lastModified: String
    var lastModifiedSeconds: Int

    init(port: Int, target: String) throws {
        let response = try rawRequest(port: port, "HEAD", target)
        etag = try #require(response.header("etag"))
        lastModified = try #require(response.header("last-modified"))
        lastModifiedSeconds = try #require(WireCheck.seconds(fromHTTPDate: lastModified))
    }

    /// Last-Modified shifted by `seconds`, as an IMF-fixdate.
    func date(offsetBy seconds: Int) -> String { WireCheck.httpDate(seconds: lastModifiedSeconds + seconds) }
}

@Suite("Server over the wire: conditional requests")
struct ServerConditionalTests {
    private static let targets = ["/bytes/64K?seed=6", "/files/sample.bin"]

    @Test("If-Range with the strong ETag gives 206; a weak or different ETag gives 200", arguments: targets)
    func ifRangeETag(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let current = try Validators(port: server.port, target: target)
            #expect(current.etag.hasPrefix("\""))
            let matching = try rawRequest(
                port: server.port, "GET", target, headers: ["Range": "bytes=0-9", "If-Range": current.etag])
            #expect(matching.status == 206)
            #expect(matching.header("content-range") == "bytes 0-9/65536")
            #expect(matching.body.count == 10)
            for ifRange in ["W/" + current.etag, "\"something-else\""] {
                let response = try rawRequest(
                    port: server.port, "GET", target, headers: ["Range": "bytes=0-9", "If-Range": ifRange])
                #expect(response.status == 200, "If-Range: \(ifRange)")
                #expect(response.header("content-range") == nil)
                #expect(response.body.count == 65536)
            }
        }
    }

    @Test("If-Range with a date matches only Last-Modified exactly", arguments: targets)
    func ifRangeDate(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let current = try Validators(port: server.port, target: target)
            let exact = try rawRequest(
                port: server.port, "GET", target, headers: ["Range": "bytes=-5", "If-Range": current.lastModified])
            #expect(exact.status == 206)
            #expect(exact.header("content-range") == "bytes 65531-65535/65536")
            for offset in [-86_400, -1, 1, 86_400] {
                let response = try rawRequest(
                    port: server.port, "GET", target,
                    headers: ["Range": "bytes=-5", "If-Range": current.date(offsetBy: offset)]
                )
                #expect(response.status == 200, "If-Range date offset \(offset)")
                #expect(response.body.count == 65536)
            }
        }
    }

    @Test("If-None-Match uses weak comparison and * matches: 304 with ETag and Last-Modified, before Range")
    func ifNoneMatch() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for target in Self.targets {
                let current = try Validators(port: server.port, target: target)
                let values = [
                    current.etag, "W/" + current.etag, "*", "\"nope\", \(current.etag)", "W/\"x\",W/\(current.etag)",
                ]
                for value in values {
                    for range in [nil, "bytes=0-9"] as [String?] {
                        var headers = ["If-None-Match": value]
                        headers["Range"] = range
                        // A second request on the same connection proves the 304 carried no body.
                        let connection = try RawHTTPConnection(port: server.port)
                        try connection.request("GET", target, headers: headers)
                        let response = try connection.readResponse()
                        #expect(response.status == 304, "If-None-Match: \(value), Range: \(range ?? "-")")
                        #expect(response.header("etag") == current.etag)
                        #expect(response.header("last-modified") == current.lastModified)
                        #expect(response.header("content-range") == nil)
                        try connection.request("GET", "/healthz", close: true)
                        #expect(try connection.readResponse().status == 200)
                    }
                }
                let other = try rawRequest(
                    port: server.port, "GET", target, headers: ["If-None-Match": "\"nope\", W/\"other\""])
                #expect(other.status == 200)
                #expect(other.body.count == 65536)
            }
        }
    }

    @Test("If-Modified-Since gives 304 unless modified later, and is ignored when If-None-Match is present")
    func ifModifiedSince() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for target in Self.targets {
                let current = try Validators(port: server.port, target: target)
                for date in [current.lastModified, current.date(offsetBy: 1), current.date(offsetBy: 86_400)] {
                    let response = try rawRequest(
                        port: server.port, "GET", target, headers: ["If-Modified-Since": date, "Range": "bytes=0-0"])
                    #expect(response.status == 304, "If-Modified-Since: \(date)")
                    #expect(response.header("etag") == current.etag)
                    #expect(response.header("last-modified") == current.lastModified)
                }
                let older = try rawRequest(
                    port: server.port, "GET", target, headers: ["If-Modified-Since": current.date(offsetBy: -1)])
                #expect(older.status == 200)
                #expect(older.body.count == 65536)
                let overridden = try rawRequest(
                    port: server.port, "GET", target,
                    headers: ["If-Modified-Since": current.lastModified, "If-None-Match": "\"nope\""]
                )
                #expect(overridden.status == 200)
                #expect(overridden.body.count == 65536)
            }
        }
    }

    @Test("If-Match and If-Unmodified-Since that fail give 412; passing ones do not")
    func preconditionFailed() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for target in Self.targets {
                let current = try Validators(port: server.port, target: target)
                let failing: [[String: String]] = [
                    ["If-Match": "\"nope\""], ["If-Match": "W/" + current.etag], ["If-Match": "\"a\", \"b\""],
                    ["If-Unmodified-Since": current.date(offsetBy: -1)],
                    ["If-Unmodified-Since": current.date(offsetBy: -86_400)],
                    ["If-Match": "\"nope\"", "Range": "bytes=0-9"],
                ]
                for headers in failing {
                    let response = try rawRequest(port: server.port, "GET", target, headers: headers)
                    #expect(response.status == 412, "\(headers)")
                    #expect(response.header("content-range") == nil)
                }
                let passing: [[String: String]] = [
                    ["If-Match": current.etag], ["If-Match": "*"], ["If-Match": "\"nope\", \(current.etag)"],
                    ["If-Unmodified-Since": current.lastModified], ["If-Unmodified-Since": current.date(offsetBy: 60)],
                ]
                for headers in passing {
                    let response = try rawRequest(port: server.port, "GET", target, headers: headers)
                    #expect(response.status == 200, "\(headers)")
                    #expect(response.body.count == 65536)
                }
                let ranged = try rawRequest(
                    port: server.port, "GET", target, headers: ["If-Match": current.etag, "Range": "bytes=1-2"])
                #expect(ranged.status == 206)
                #expect(ranged.header("content-range") == "bytes 1-2/65536")
            }
        }
    }
}
