import Foundation
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// `lm-collide=1`: a new version keeps the previous version's Last-Modified, over plain HTTP and TLS, in a query and in
/// a scenario step, read with raw clients.
@Suite("Last-Modified collisions")
struct ServerLastModifiedCollideTests: TLSWireSuite {
    @Test("lm-collide: version 2 has new bytes and ETag under version 1's Last-Modified, over http and https")
    func collides() async throws {
        try await withRangeServer(configuration()) { server in
            let old = try await FaultWire.get(server, "/bytes/16K?seed=61")
            let oldDate = try #require(old.header("last-modified"))
            let target = "/bytes/16K?seed=61&version=2&lm-collide=1"
            let new = try await FaultWire.get(server, target)
            #expect(new.status == 200)
            #expect(new.header("last-modified") == oldDate)
            #expect(new.header("etag") != old.header("etag"))
            #expect(new.body == FaultWire.expected(seed: 61, version: 2, count: 16_384))
            #expect(new.body != old.body)
            // Without the fault version 2 is dated apart.
            let apart = try await FaultWire.get(server, "/bytes/16K?seed=61&version=2")
            #expect(apart.header("last-modified") != oldDate)
            // The old date as If-Range matches the new version: a resume splices version 2 onto version 1.
            let resumed = try await FaultWire.get(
                server, target, headers: ["Range": "bytes=8192-", "If-Range": oldDate])
            #expect(resumed.status == 206)
            #expect(resumed.body == FaultWire.expected(seed: 61, version: 2, offset: 8192, count: 8192))
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=8192-", "If-Range": oldDate])
            #expect(secure.status == 206)
            #expect(secure.headers["last-modified"] == oldDate)
            #expect(secure.body == resumed.body)
            // Version 1 keeps its own date.
            let first = try await FaultWire.get(server, "/bytes/16K?seed=61&lm-collide=1")
            #expect(first.header("last-modified") == oldDate)
            #expect(first.header("etag") == old.header("etag"))
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 3)
            #expect(entries.allSatisfy { $0.faults == ["lm-collide=1"] })
        }
    }

    @Test("lm-collide in a scenario step: the version change keeps the date, the ETag tells them apart")
    func collidesInAStep() async throws {
        let scenario = """
            {
              "description": "The file is replaced under the same date.",
              "resource": "/bytes/8K?seed=62",
              "attempts": [ { "drop-after": "4K" }, { "version": 2, "lm-collide": true } ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["collide.json": scenario])) { server in
            let target = "/scenario/collide/run1"
            let first = try await FaultWire.get(server, target)
            #expect(first.body.count == 4096)
            let date = try #require(first.header("last-modified"))
            let tag = try #require(first.header("etag"))
            let byDate = try await FaultWire.get(server, target, headers: ["Range": "bytes=4096-", "If-Range": date])
            #expect(byDate.status == 206)
            #expect(byDate.header("last-modified") == date)
            #expect(byDate.body == FaultWire.expected(seed: 62, version: 2, offset: 4096, count: 4096))
            let byTag = try await FaultWire.get(server, target, headers: ["Range": "bytes=4096-", "If-Range": tag])
            #expect(byTag.status == 200)
            #expect(byTag.body == FaultWire.expected(seed: 62, version: 2, count: 8192))
        }
    }

    @Test("lm-collide on a file is a 400 with one line; a bad value names the key")
    func refused() async throws {
        try await withRangeServer(configuration()) { server in
            let file = try await FaultWire.get(server, "/files/sample.bin?lm-collide=1")
            #expect(file.status == 400)
            let text = String(decoding: file.body, as: UTF8.self)
            #expect(text.contains("lm-collide=1' works on /bytes/ resources only"), "\(text)")
            #expect(text.split(separator: "\n").count == 1)
            let bad = try await FaultWire.get(server, "/bytes/1K?lm-collide=maybe")
            #expect(bad.status == 400)
            #expect(
                String(decoding: bad.body, as: UTF8.self).contains("lm-collide=maybe: expected 1, true, 0 or false"))
        }
    }
}
