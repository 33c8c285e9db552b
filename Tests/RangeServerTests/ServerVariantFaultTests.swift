import Foundation
import Testing

@testable import RangeServer

/// `etag-salt`, `if-range=date-only`, `416-shape`, `content-range-on-200` and `head=405` over the wire, with the raw
/// client.
@Suite("Server over the wire: validator churn and status variants")
struct ServerVariantFaultTests {
    @Test("etag-salt changes the ETag only: same bytes, same Last-Modified, and the old ETag no longer resumes")
    func etagSalt() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let plain = try await FaultWire.get(server, "/bytes/64K?seed=3")
            let edgeA = try await FaultWire.get(server, "/bytes/64K?seed=3&etag-salt=edgeA")
            let edgeB = try await FaultWire.get(server, "/bytes/64K?seed=3&etag-salt=edgeB")
            let tags = [plain, edgeA, edgeB].compactMap { $0.header("etag") }
            #expect(Set(tags).count == 3, "\(tags)")
            #expect(edgeA.header("etag") == "\"b10000-3-v1-edgeA\"")
            #expect(edgeA.header("last-modified") == plain.header("last-modified"))
            #expect(edgeB.header("last-modified") == plain.header("last-modified"))
            #expect(edgeA.body == plain.body && edgeB.body == plain.body)
            #expect(edgeA.body == FaultWire.expected(seed: 3, count: 65_536))

            // Edge B does not recognise edge A's ETag: 200 with the whole body; its own ETag resumes.
            let crossEdge = try await FaultWire.get(
                server, "/bytes/64K?seed=3&etag-salt=edgeB",
                headers: ["Range": "bytes=1000-", "If-Range": try #require(edgeA.header("etag"))])
            #expect(crossEdge.status == 200)
            #expect(crossEdge.body.count == 65_536)
            let sameEdge = try await FaultWire.get(
                server, "/bytes/64K?seed=3&etag-salt=edgeB",
                headers: ["Range": "bytes=1000-", "If-Range": try #require(edgeB.header("etag"))])
            #expect(sameEdge.status == 206)
            #expect(sameEdge.body == FaultWire.expected(seed: 3, offset: 1000, count: 64_536))
            // With weak-etag the salted tag is weak.
            let weak = try await FaultWire.get(server, "/bytes/1K?etag-salt=e1&weak-etag=1", method: "HEAD")
            #expect(weak.header("etag") == "W/\"b400-0-v1-e1\"")
        }
    }

    @Test("etag-salt on a file keeps the file's bytes", arguments: ["/files/sample.bin"])
    func etagSaltOnFile(target: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let plain = try await FaultWire.get(server, target)
            let salted = try await FaultWire.get(server, target + "?etag-salt=s1")
            #expect(salted.header("etag") != plain.header("etag"))
            #expect(salted.header("etag")?.hasSuffix("-s1\"") == true)
            #expect(salted.body == plain.body)
        }
    }

    @Test("if-range=date-only: an ETag in If-Range gets 200, a matching date gets 206, a wrong date 200")
    func ifRangeDateOnly() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/64K?seed=8&if-range=date-only"
            let head = try await FaultWire.get(server, target, method: "HEAD")
            let etag = try #require(head.header("etag"))
            let date = try #require(head.header("last-modified"))
            let byTag = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-", "If-Range": etag])
            #expect(byTag.status == 200)
            #expect(byTag.header("content-range") == nil)
            #expect(byTag.body == FaultWire.expected(seed: 8, count: 65_536))
            let byDate = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-", "If-Range": date])
            #expect(byDate.status == 206)
            #expect(byDate.header("content-range") == "bytes 100-65535/65536")
            let seconds = try #require(WireCheck.seconds(fromHTTPDate: date))
            let staleDate = WireCheck.httpDate(seconds: seconds - 60)
            let byStaleDate = try await FaultWire.get(
                server, target, headers: ["Range": "bytes=100-", "If-Range": staleDate])
            #expect(byStaleDate.status == 200)
            // Without If-Range the range is honoured as usual.
            let bare = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-"])
            #expect(bare.status == 206)
        }
    }

    @Test("416-shape: the default 416 has Content-Range; no-content-range omits it; html-body sends an HTML page")
    func unsatisfiableShapes() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let past = ["Range": "bytes=70000-"]
            let standard = try await FaultWire.get(server, "/bytes/64K", headers: past)
            #expect(standard.status == 416)
            #expect(standard.header("content-range") == "bytes */65536")

            let bare = try await FaultWire.get(server, "/bytes/64K?416-shape=no-content-range", headers: past)
            #expect(bare.status == 416)
            #expect(bare.header("content-range") == nil)
            #expect(bare.header("etag") != nil)

            let html = try await FaultWire.get(server, "/bytes/64K?416-shape=html-body", headers: past)
            #expect(html.status == 416)
            #expect(html.header("content-type") == "text/html; charset=utf-8")
            #expect(html.header("content-range") == "bytes */65536")
            let page = String(decoding: html.body, as: UTF8.self)
            #expect(page.hasPrefix("<!DOCTYPE html>"))
            #expect(html.header("content-length") == String(html.body.count))
            #expect(html.body.count > 100)

            // A satisfiable range is untouched by the shape.
            let fine = try await FaultWire.get(
                server, "/bytes/64K?416-shape=html-body", headers: ["Range": "bytes=0-9"])
            #expect(fine.status == 206)
            #expect(fine.body.count == 10)
            let entry = try #require(
                try await FaultWire.entries(server, target: "/bytes/64K?416-shape=no-content-range").first)
            #expect(entry.faults == ["416-shape=no-content-range"])
        }
    }

    @Test("content-range-on-200 adds a whole-representation Content-Range to a 200, and nothing to a 206")
    func contentRangeOn200() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let full = try await FaultWire.get(server, "/bytes/64K?seed=2&content-range-on-200=1")
            #expect(full.status == 200)
            #expect(full.header("content-range") == "bytes 0-65535/65536")
            #expect(full.body == FaultWire.expected(seed: 2, count: 65_536))
            // A ranged request the server answers in full (ignore-range) shows it too.
            let ignored = try await FaultWire.get(
                server, "/bytes/64K?seed=2&content-range-on-200=1&ignore-range=1", headers: ["Range": "bytes=500-"])
            #expect(ignored.status == 200)
            #expect(ignored.header("content-range") == "bytes 0-65535/65536")
            let partial = try await FaultWire.get(
                server, "/bytes/64K?seed=2&content-range-on-200=1", headers: ["Range": "bytes=500-"])
            #expect(partial.status == 206)
            #expect(partial.header("content-range") == "bytes 500-65535/65536")
        }
    }

    @Test("chunked with drop-after at the very end sends every byte but no last chunk (a complete partial)")
    func chunkedDropAtTheEnd() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try await FaultWire.get(server, "/bytes/64K?seed=4&chunked=1&drop-after=64K")
            #expect(response.status == 200)
            #expect(response.header("transfer-encoding") == "chunked")
            #expect(response.body == FaultWire.expected(seed: 4, count: 65_536))
            #expect(response.ending == .closed, "the last chunk is withheld")
            let entry = try #require(
                try await FaultWire.entries(server, target: "/bytes/64K?seed=4&chunked=1&drop-after=64K").first)
            #expect(entry.outcome == .dropped)
            #expect(entry.bodyBytesSent == 65_536)
            // With a Content-Length the same drop point is simply the end of a complete response.
            let plain = try await FaultWire.get(server, "/bytes/64K?seed=4&drop-after=64K")
            #expect(plain.ending == .complete)
        }
    }

    @Test("head=405 refuses HEAD with Allow: GET and serves GET as usual")
    func headRefused() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let head = try await FaultWire.get(server, "/bytes/64K?head=405", method: "HEAD")
            #expect(head.status == 405)
            #expect(head.header("allow") == "GET")
            #expect(head.body.isEmpty)
            let get = try await FaultWire.get(server, "/bytes/64K?head=405")
            #expect(get.status == 200)
            #expect(get.body.count == 65_536)
            let file = try await FaultWire.get(server, "/files/sample.bin?head=405", method: "HEAD")
            #expect(file.status == 405)
        }
    }

    @Test("a bad value or combination of the new parameters is a 400 with one line naming it")
    func badRequests() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for (query, named) in [
                ("if-range=etag-only", "if-range=etag-only"), ("416-shape=teapot", "416-shape=teapot"),
                ("head=404", "head=404"), ("etag-salt=a%20b", "etag-salt=a b"),
                ("etag-salt=x&no-etag=1", "etag-salt=x"), ("probability=0.5", "probability=0.5"),
                ("fault-seed=1&drop-after=1K", "fault-seed=1"), ("probability=2&drop-after=1K", "probability=2"),
            ] {
                let response = try await FaultWire.get(server, "/bytes/1K?" + query)
                let text = String(decoding: response.body, as: UTF8.self)
                #expect(response.status == 400, "\(query)")
                #expect(text.contains(named), "\(query): \(text)")
                #expect(text.split(separator: "\n").count == 1, "\(text)")
            }
        }
    }
}
