import Foundation
import Subprocess
import Testing

@testable import RangeServer

/// `encoding=gzip`, `gzip-ignores-range` and `gzip-always` over the wire.
@Suite("Server over the wire: content encoding")
struct ServerEncodingTests {
    /// `bytes` decoded by the system's `gzip -dc`: an implementation other than the one that encoded them.
    private func gunzip(_ bytes: [UInt8]) async throws -> [UInt8] {
        let result = try await Subprocess.run(
            .name("gzip"), arguments: ["-dc"], input: .array(bytes), output: .bytes(limit: 64 << 20),
            error: .discarded)
        #expect(result.terminationStatus.isSuccess)
        return result.standardOutput
    }

    @Test("gzip: its own strong ETag, Vary, Content-Encoding; the bytes decode to the identity representation")
    func gzipRepresentation() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/64K?seed=5&encoding=gzip"
            let identity = try await FaultWire.get(server, target)
            let gzipped = try await FaultWire.get(server, target, headers: ["Accept-Encoding": "br, gzip"])
            #expect(identity.header("content-encoding") == nil)
            #expect(identity.header("vary") == "Accept-Encoding")
            #expect(identity.body == FaultWire.expected(seed: 5, count: 65_536))
            #expect(gzipped.header("content-encoding") == "gzip")
            #expect(gzipped.header("vary") == "Accept-Encoding")
            #expect(gzipped.header("etag") == "\"b10000-5-v1-gzip\"")
            #expect(gzipped.header("etag") != identity.header("etag"))
            #expect(gzipped.header("content-length") == String(gzipped.body.count))
            #expect(try await gunzip(gzipped.body) == identity.body)
            // The same bytes on every request: a range of them can be judged and resumed.
            let again = try await FaultWire.get(server, target, headers: ["Accept-Encoding": "gzip"])
            #expect(again.body == gzipped.body)
        }
    }

    @Test("gzip: ranges and If-Range are over the encoded bytes and the encoded ETag")
    func rangesOverEncodedBytes() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/files/sample.bin?encoding=gzip"
            let whole = try await FaultWire.get(server, target, headers: ["Accept-Encoding": "gzip"])
            let etag = try #require(whole.header("etag"))
            let total = whole.body.count
            let tail = try await FaultWire.get(
                server, target, headers: ["Accept-Encoding": "gzip", "Range": "bytes=100-", "If-Range": etag])
            #expect(tail.status == 206)
            #expect(tail.header("content-range") == "bytes 100-\(total - 1)/\(total)")
            #expect(Array(whole.body.prefix(100)) + tail.body == whole.body)
            // The identity ETag does not validate a range of the encoded bytes.
            let identity = try await FaultWire.get(server, "/files/sample.bin", method: "HEAD")
            let mismatched = try await FaultWire.get(
                server, target,
                headers: [
                    "Accept-Encoding": "gzip", "Range": "bytes=100-", "If-Range": try #require(identity.header("etag")),
                ])
            #expect(mismatched.status == 200)
            #expect(mismatched.body == whole.body)
            let notModified = try await FaultWire.get(
                server, target, headers: ["Accept-Encoding": "gzip", "If-None-Match": etag])
            #expect(notModified.status == 304)
            #expect(notModified.header("vary") == "Accept-Encoding")
        }
    }

    @Test("gzip-ignores-range: a ranged request accepting gzip gets 200 with the whole encoded body")
    func ignoresRange() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let target = "/bytes/64K?seed=6&encoding=gzip-ignores-range"
            let ranged = try await FaultWire.get(
                server, target, headers: ["Accept-Encoding": "gzip", "Range": "bytes=10-"])
            #expect(ranged.status == 200)
            #expect(ranged.header("content-encoding") == "gzip")
            #expect(try await gunzip(ranged.body) == FaultWire.expected(seed: 6, count: 65_536))
            // Identity is still served by range.
            let plain = try await FaultWire.get(server, target, headers: ["Range": "bytes=10-"])
            #expect(plain.status == 206)
            #expect(plain.body == FaultWire.expected(seed: 6, offset: 10, count: 65_526))
        }
    }

    @Test("gzip-always: encoded with no Accept-Encoding and with identity; gzip;q=0 refuses plain gzip")
    func alwaysAndRefusal() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let bare = try await FaultWire.get(server, "/bytes/4K?encoding=gzip-always")
            #expect(bare.header("content-encoding") == "gzip")
            let identity = try await FaultWire.get(
                server, "/bytes/4K?encoding=gzip-always", headers: ["Accept-Encoding": "identity"])
            #expect(identity.header("content-encoding") == "gzip")
            #expect(try await gunzip(identity.body) == FaultWire.expected(seed: 0, count: 4096))
            let refused = try await FaultWire.get(
                server, "/bytes/4K?encoding=gzip", headers: ["Accept-Encoding": "gzip;q=0, *"])
            #expect(refused.header("content-encoding") == nil)
            #expect(refused.body.count == 4096)
        }
    }

    @Test("a bad encoding value and a representation too long to encode answer 400 naming the parameter")
    func badValues() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let unknown = try await FaultWire.get(server, "/bytes/4K?encoding=br")
            #expect(unknown.status == 400)
            #expect(String(decoding: unknown.body, as: UTF8.self).contains("encoding=br"))
            let huge = try await FaultWire.get(server, "/bytes/65M?encoding=gzip", headers: ["Accept-Encoding": "gzip"])
            #expect(huge.status == 400)
            #expect(String(decoding: huge.body, as: UTF8.self).contains("encoding=gzip"))
        }
    }
}

@Suite("Accept-Encoding")
struct AcceptEncodingTests {
    @Test(
        "which fields accept gzip",
        arguments: [
            (nil, false), ("", false), ("identity", false), ("gzip", true), ("GZip", true), ("x-gzip", true),
            ("br, gzip;q=0.5", true), ("gzip;q=0", false), ("gzip; q=0.000", false), ("*", true), ("*;q=0", false),
            ("gzip;q=0, *", false), ("deflate, *;q=0.1", true), ("br", false),
        ] as [(String?, Bool)])
    func allowsGzip(field: String?, accepts: Bool) {
        #expect(AcceptEncoding.allowsGzip(field) == accepts)
    }
}
