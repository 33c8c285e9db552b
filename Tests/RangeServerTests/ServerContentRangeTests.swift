import Foundation
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// The faults that make a 206's Content-Range say something else than a plain 206 would, over plain HTTP and TLS,
/// in a query and in a scenario step, read with raw clients.
@Suite("Content-Range faults")
struct ServerContentRangeTests: TLSWireSuite {
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

    // MARK: - content-range=RAW

    @Test("content-range=RAW: a 206 carries the value verbatim over the range asked for, over http and https")
    func rawContentRange() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=35&content-range=bytes%3D100-199/100"
            let expected = FaultWire.expected(seed: 35, offset: 100, count: 100)
            let plain = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-199"])
            #expect(plain.status == 206)
            #expect(plain.header("content-range") == "bytes=100-199/100")
            #expect(plain.header("content-length") == "100")
            #expect(plain.body == expected)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=100-199"])
            #expect(secure.status == 206)
            #expect(secure.headers["content-range"] == "bytes=100-199/100")
            #expect(secure.headers["content-length"] == "100")
            #expect(secure.body == expected)
            // An end past the complete length: the body is still the 10 bytes asked for.
            let past = try await FaultWire.get(
                server, "/bytes/64K?seed=35&content-range=bytes%200-99999/65536", headers: ["Range": "bytes=0-9"])
            #expect(past.header("content-range") == "bytes 0-99999/65536")
            #expect(past.body == FaultWire.expected(seed: 35, count: 10))
            // A 200, a 416 and a HEAD (answered as a 200) keep their own.
            let whole = try await FaultWire.get(server, target)
            #expect(whole.status == 200 && whole.header("content-range") == nil && whole.body.count == 65536)
            let unsatisfiable = try await FaultWire.get(server, target, headers: ["Range": "bytes=70000-"])
            #expect(unsatisfiable.status == 416)
            #expect(unsatisfiable.header("content-range") == "bytes */65536")
            let head = try await FaultWire.get(server, target, method: "HEAD", headers: ["Range": "bytes=100-199"])
            #expect(head.status == 200 && head.header("content-range") == nil)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.map(\.status).sorted() == [200, 200, 206, 206, 416])
            for entry in entries {
                let names = entry.status == 416 ? [] : ["content-range=bytes=100-199/100"]
                #expect(entry.faults == names, "\(entry.status)")
            }
        }
    }

    @Test("content-range in a scenario step, on an unsolicited 206 the query asks for")
    func rawContentRangeInAStep() async throws {
        let scenario = """
            {
              "description": "The first 206 says it starts at byte 5.",
              "resource": "/bytes/8K?seed=38",
              "attempts": [ { "content-range": "bytes 5-8196/8192" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["lying-range.json": scenario])) { server in
            let target = "/scenario/lying-range/run1?unsolicited-206=1"
            let first = try await FaultWire.get(server, target)
            #expect(first.status == 206)
            #expect(first.header("content-range") == "bytes 5-8196/8192")
            #expect(first.body == FaultWire.expected(seed: 38, count: 8192))
            let second = try await FaultWire.get(server, target)
            #expect(second.status == 206)
            #expect(second.header("content-range") == "bytes 0-8191/8192")
        }
    }

    @Test("content-range refuses an empty value, control characters and spaces at the ends, with one line")
    func rawContentRangeBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            for value in ["", "bytes%200-1/2%0D%0ASet-Cookie:%20a=b", "bytes%090-1/2", "%20bytes%200-1/2"] {
                let response = try await FaultWire.get(server, "/bytes/1K?content-range=" + value)
                #expect(response.status == 400, "\(value)")
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(body.contains("content-range="), "\(body)")
                #expect(body.contains("expected a header value"), "\(body)")
                #expect(body.split(separator: "\n").count == 1, "\(body)")
            }
        }
    }

    // MARK: - multipart=always

    /// The parts of a multipart/byteranges answer, checked for one part and a Content-Length that matches.
    private func onePart(
        status: Int, contentType: String?, contentLength: String?, contentRange: String?, body: [UInt8]
    ) throws -> WireCheck.Part {
        #expect(status == 206)
        #expect(contentRange == nil, "no Content-Range beside the parts")
        #expect(contentLength == String(body.count))
        let boundary = try #require(WireCheck.boundary(fromContentType: contentType ?? ""), "\(contentType ?? "")")
        let parts = try WireCheck.parts(of: body, boundary: boundary)
        try #require(parts.count == 1)
        return parts[0]
    }

    @Test("multipart=always: one range is answered multipart/byteranges with one part, over http and https")
    func multipartAlways() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=36&multipart=always"
            let expected = FaultWire.expected(seed: 36, offset: 100, count: 100)
            let plain = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-199"])
            let part = try onePart(
                status: plain.status, contentType: plain.header("content-type"),
                contentLength: plain.header("content-length"), contentRange: plain.header("content-range"),
                body: plain.body)
            #expect(part.headers["content-range"] == "bytes 100-199/65536")
            #expect(part.headers["content-type"] == "application/octet-stream")
            #expect(part.payload == expected)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=100-199"])
            let securePart = try onePart(
                status: secure.status, contentType: secure.headers["content-type"],
                contentLength: secure.headers["content-length"], contentRange: secure.headers["content-range"],
                body: secure.body)
            #expect(securePart.headers["content-range"] == "bytes 100-199/65536")
            #expect(securePart.payload == expected)
            // Several ranges are multipart as always; no Range, or HEAD, is a 200.
            let several = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-0,10-19"])
            let boundary = try #require(WireCheck.boundary(fromContentType: several.header("content-type") ?? ""))
            #expect(try WireCheck.parts(of: several.body, boundary: boundary).count == 2)
            let whole = try await FaultWire.get(server, target)
            #expect(whole.status == 200 && whole.body.count == 65536)
            let head = try await FaultWire.get(server, target, method: "HEAD", headers: ["Range": "bytes=100-199"])
            #expect(head.status == 200)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 5)
            #expect(entries.allSatisfy { $0.faults == ["multipart=always"] })
        }
    }

    @Test("multipart=always with misalign-range: the one part describes the bytes it carries")
    func multipartMisaligned() async throws {
        try await withRangeServer(configuration()) { server in
            let response = try await FaultWire.get(
                server, "/bytes/64K?seed=36&multipart=always&misalign-range=10", headers: ["Range": "bytes=100-199"])
            let part = try onePart(
                status: response.status, contentType: response.header("content-type"),
                contentLength: response.header("content-length"), contentRange: response.header("content-range"),
                body: response.body)
            #expect(part.headers["content-range"] == "bytes 90-199/65536")
            #expect(part.payload == FaultWire.expected(seed: 36, offset: 90, count: 110))
        }
    }

    @Test("multipart in a scenario step applies to that attempt; an unsolicited 206 from the query is one part too")
    func multipartInAStep() async throws {
        let scenario = """
            {
              "description": "The first answer is multipart.",
              "resource": "/bytes/8K?seed=39",
              "attempts": [ { "multipart": "always" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["one-part.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/one-part/run1", headers: ["Range": "bytes=0-9"])
            let part = try onePart(
                status: first.status, contentType: first.header("content-type"),
                contentLength: first.header("content-length"), contentRange: first.header("content-range"),
                body: first.body)
            #expect(part.headers["content-range"] == "bytes 0-9/8192")
            let second = try await FaultWire.get(server, "/scenario/one-part/run1", headers: ["Range": "bytes=0-9"])
            #expect(second.header("content-range") == "bytes 0-9/8192")
            #expect(second.body == FaultWire.expected(seed: 39, count: 10))
            let unasked = try await FaultWire.get(server, "/scenario/one-part/run2?unsolicited-206=1")
            let wholePart = try onePart(
                status: unasked.status, contentType: unasked.header("content-type"),
                contentLength: unasked.header("content-length"), contentRange: unasked.header("content-range"),
                body: unasked.body)
            #expect(wholePart.headers["content-range"] == "bytes 0-8191/8192")
            #expect(wholePart.payload == FaultWire.expected(seed: 39, count: 8192))
        }
    }

    @Test("multipart takes only always, answered 400 with one line naming it")
    func multipartBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            let response = try await FaultWire.get(server, "/bytes/1K?multipart=1")
            #expect(response.status == 400)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.contains("multipart=1: expected always"), "\(body)")
            #expect(body.split(separator: "\n").count == 1, "\(body)")
        }
    }

    // MARK: - unsolicited-206=1

    @Test("unsolicited-206: a request without Range gets 206 bytes 0-LAST/LENGTH and the whole body, http and https")
    func unsolicited() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=37&unsolicited-206=1"
            let expected = FaultWire.expected(seed: 37, count: 65536)
            let plain = try await FaultWire.get(server, target)
            #expect(plain.status == 206)
            #expect(plain.header("content-range") == "bytes 0-65535/65536")
            #expect(plain.header("content-length") == "65536")
            #expect(plain.body == expected)
            let secure = try await tlsGet(server, target)
            #expect(secure.status == 206)
            #expect(secure.headers["content-range"] == "bytes 0-65535/65536")
            #expect(secure.body == expected)
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.status == 206)
            #expect(head.header("content-range") == "bytes 0-65535/65536")
            #expect(head.header("content-length") == "65536")
            // A request with Range, a conditional that matches and an If-Range that does not are answered as usual.
            let ranged = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-9"])
            #expect(ranged.status == 206 && ranged.header("content-range") == "bytes 0-9/65536")
            let tag = try #require(plain.header("etag"))
            let notModified = try await FaultWire.get(server, target, headers: ["If-None-Match": tag])
            #expect(notModified.status == 304 && notModified.header("content-range") == nil)
            let mismatch = try await FaultWire.get(
                server, target, headers: ["Range": "bytes=0-9", "If-Range": "\"another\""])
            #expect(mismatch.status == 200 && mismatch.header("content-range") == nil)
            #expect(mismatch.body == expected)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 6)
            for entry in entries {
                #expect(entry.faults == (entry.status == 304 ? [] : ["unsolicited-206=1"]), "\(entry.status)")
            }
            // An empty representation has no byte range to name: a 200.
            let empty = try await FaultWire.get(server, "/bytes/0?unsolicited-206=1")
            #expect(empty.status == 200 && empty.header("content-range") == nil && empty.body.isEmpty)
        }
    }

    @Test("unsolicited-206 in a scenario step, with range-cap from the query cutting it")
    func unsolicitedInAStep() async throws {
        let scenario = """
            {
              "description": "The first plain GET gets a 206.",
              "resource": "/bytes/8K?seed=40",
              "attempts": [ { "unsolicited-206": true }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["unasked.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/unasked/run1")
            #expect(first.status == 206)
            #expect(first.header("content-range") == "bytes 0-8191/8192")
            #expect(first.body == FaultWire.expected(seed: 40, count: 8192))
            let second = try await FaultWire.get(server, "/scenario/unasked/run1")
            #expect(second.status == 200 && second.header("content-range") == nil)
            let capped = try await FaultWire.get(server, "/scenario/unasked/run2?range-cap=1K")
            #expect(capped.status == 206)
            #expect(capped.header("content-range") == "bytes 0-1023/8192")
            #expect(capped.body == FaultWire.expected(seed: 40, count: 1024))
        }
    }

    @Test("unsolicited-206 takes a flag, answered 400 with one line naming it")
    func unsolicitedBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            let response = try await FaultWire.get(server, "/bytes/1K?unsolicited-206=yes")
            #expect(response.status == 400)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.contains("unsolicited-206=yes: expected 1, true, 0 or false"), "\(body)")
            #expect(body.split(separator: "\n").count == 1, "\(body)")
        }
    }
}
