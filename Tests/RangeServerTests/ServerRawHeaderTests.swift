import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// `header=NAME:VALUE`: fields sent as written, in the order given, on every answer of the URL, over plain HTTP and
/// TLS, from a query and from a scenario step; refusals with one line.
@Suite("Raw header fields (header=)")
struct ServerRawHeaderTests: TLSWireSuite {
    /// The fields after the answer's own: those named `names`, in the order they came.
    private func fields(
        _ response: RawHTTPConnection.Response, named names: Set<String>
    ) -> [String] {
        response.headers.filter { names.contains($0.name.lowercased()) }.map { "\($0.name):\($0.value)" }
    }

    @Test("repeats and a vendor field reach the client in the order given, after the answer's own, on every status")
    func fieldsInOrder() async throws {
        try await withRangeServer(configuration()) { server in
            let query =
                "header=x-goog-stored-content-length:65536&header=X-Cache:MISS&header=X-Cache:%20HIT"
                + "&header=x-goog-hash:crc32c=n03x6A==,md5=Ojk9c3dhfxgoKVVHYwFbHQ=="
            let target = "/bytes/64K?seed=61&" + query
            let names: Set = ["x-goog-stored-content-length", "x-cache", "x-goog-hash"]
            let expected = [
                "x-goog-stored-content-length:65536", "X-Cache:MISS", "X-Cache:HIT",
                "x-goog-hash:crc32c=n03x6A==,md5=Ojk9c3dhfxgoKVVHYwFbHQ==",
            ]
            let full = try await FaultWire.get(server, target)
            #expect(full.status == 200 && full.body == FaultWire.expected(seed: 61, count: 65536))
            #expect(fields(full, named: names) == expected)
            // After the answer's own fields: the last of them is the vendor's.
            let positions = full.headers.indices.filter { names.contains(full.headers[$0].name.lowercased()) }
            let own = try #require(full.headers.firstIndex { $0.name.lowercased() == "content-type" })
            #expect(positions.allSatisfy { $0 > own })
            let ranged = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-199"])
            #expect(ranged.status == 206 && fields(ranged, named: names) == expected)
            #expect(ranged.body == FaultWire.expected(seed: 61, offset: 100, count: 100))
            let etag = try #require(full.header("etag"))
            let notModified = try await FaultWire.get(server, target, headers: ["If-None-Match": etag])
            #expect(notModified.status == 304 && fields(notModified, named: names) == expected)
            let unsatisfiable = try await FaultWire.get(server, target, headers: ["Range": "bytes=70000-"])
            #expect(unsatisfiable.status == 416 && fields(unsatisfiable, named: names) == expected)
            let injected = try await FaultWire.get(server, "/bytes/64K?status=503&" + query)
            #expect(injected.status == 503 && fields(injected, named: names) == expected)
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.status == 200 && fields(head, named: names) == expected && head.body.isEmpty)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=0-9"])
            #expect(secure.status == 206 && secure.headers["x-goog-stored-content-length"] == "65536")
            #expect(secure.body == FaultWire.expected(seed: 61, count: 10))
            // The journal names each field, percent-encoded where a query could not carry it; the names, joined with
            // &, are a query that gives the same fields back.
            let entries = try await FaultWire.entries(server, target: target, count: 6)
            let named = [
                "header=x-goog-stored-content-length:65536", "header=X-Cache:MISS", "header=X-Cache:HIT",
                "header=x-goog-hash:crc32c=n03x6A==,md5=Ojk9c3dhfxgoKVVHYwFbHQ==",
            ]
            #expect(entries.count == 6)
            #expect(entries.allSatisfy { $0.faults == named }, "\(entries.map(\.faults))")
            let again = try await FaultWire.get(server, "/bytes/1K?" + named.joined(separator: "&"))
            #expect(fields(again, named: names) == expected)
        }
    }

    @Test("the value goes out byte for byte: a tab inside it, non-ASCII bytes, characters no client expects")
    func verbatimValue() async throws {
        try await withRangeServer(configuration()) { server in
            let response = try await FaultWire.get(
                server, "/bytes/1K?header=X-Odd:a%09b%20%22c%22%C3%A9;%3D,&header=X-Odd:%20%09x")
            #expect(response.status == 200)
            // The second value's leading space and tab are dropped (they are not part of a field value).
            #expect(fields(response, named: ["x-odd"]) == ["X-Odd:a\tb \"c\"é;=,", "X-Odd:x"])
        }
    }

    @Test("CR, LF or NUL in the value, a framing field, a bad name or a missing colon is a 400 naming header=")
    func refusals() async throws {
        try await withRangeServer(configuration()) { server in
            for value in [
                "X-A:1%0D%0ASet-Cookie:%20a=b", "X-A:a%0Ab", "X-A:a%0Db", "X-A:a%00b", "Content-Length:5",
                "transfer-encoding:chunked", "Connection:close", "X-A:", "X-A:%20%09", "X%20A:1", ":1", "X-A", "X@A:1",
                "X-A:" + String(repeating: "a", count: 1025),
            ] {
                let response = try await FaultWire.get(server, "/bytes/1K?header=" + value)
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(response.status == 400, "\(value)")
                #expect(body.contains("bad query parameter header="), "\(body)")
                #expect(body.contains("expected NAME:VALUE"), "\(body)")
                #expect(body.split(separator: "\n").count == 1, "\(body)")
            }
            // 1024 bytes is the most a value may hold.
            let longest = try await FaultWire.get(server, "/bytes/1K?header=X-A:" + String(repeating: "a", count: 1024))
            #expect(longest.status == 200 && longest.header("x-a")?.utf8.count == 1024)
        }
    }

    @Test("in scenario steps: a string or an array of strings, and a query's header= replaces the step's")
    func inSteps() async throws {
        let scenario = """
            {
              "description": "Vendor fields that change between attempts.",
              "resource": "/bytes/8K?seed=62",
              "attempts": [
                { "header": "x-goog-stored-content-length:8192" },
                { "header": ["X-Cache:MISS", "X-Cache:HIT"], "drop-after": "1K" }
              ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["vendor.json": scenario])) { server in
            let names: Set = ["x-goog-stored-content-length", "x-cache"]
            let first = try await FaultWire.get(server, "/scenario/vendor/run1")
            #expect(first.status == 200 && fields(first, named: names) == ["x-goog-stored-content-length:8192"])
            let second = try await FaultWire.get(server, "/scenario/vendor/run1", headers: ["Range": "bytes=100-"])
            #expect(second.status == 206 && fields(second, named: names) == ["X-Cache:MISS", "X-Cache:HIT"])
            #expect(second.body.count == 1024)
            let replaced = try await FaultWire.get(server, "/scenario/vendor/run2?header=X-Cache:REVALIDATED")
            #expect(fields(replaced, named: names) == ["X-Cache:REVALIDATED"])
        }
    }

    @Test("a scenario step's bad header value or an empty array is refused with the file's line, naming the key")
    func refusedInSteps() throws {
        for (attempt, expected) in [
            (#"{ "header": ["X-A:1", "X-B:a\r\nSet-Cookie: a=b"] }"#, "header=X-B:a?Set-Cookie: a=b: expected NAME"),
            (#"{ "header": [] }"#, "header must not be an empty array"),
            (#"{ "header": "Content-Length:1" }"#, "header=Content-Length:1: expected NAME:VALUE"),
            (#"{ "header": [1] }"#, "header[0] must be a string"),
        ] {
            let json = #"{ "description": "x", "resource": "/bytes/1K", "attempts": [ "# + attempt + " ] }"
            let error = #expect(throws: RangeServerError.self) {
                try Scenario.parse(Array(json.utf8), name: "bad", source: "bad.json")
            }
            let message = error?.message ?? ""
            #expect(message.hasPrefix("bad.json:1:"), "\(message)")
            #expect(message.contains(expected), "\(message)")
            #expect(!message.contains("\n") && !message.contains("\r"))
        }
    }

    @Test("the plan's names round-trip through a query, and header= alone is a fault (no fast path)")
    func namesRoundTrip() throws {
        let query = "header=A:1&drop-after=1K&header=A:2&header=B:x%26y%3Dz"
        let plan = try FaultPlan.parse(query: QueryString.parse(query)).plan
        #expect(plan.extraHeaders.map(\.value) == ["1", "2", "x&y=z"])
        #expect(plan.appliedNames == ["drop-after=1K", "header=A:1", "header=A:2", "header=B:x%26y=z"])
        let again = try FaultPlan.parse(query: QueryString.parse(plan.appliedNames.joined(separator: "&"))).plan
        #expect(again == plan)
        #expect(!(try FaultPlan.parse(query: QueryString.parse("header=A:1")).plan.isEmpty))
    }
}
