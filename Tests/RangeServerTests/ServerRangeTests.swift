import Foundation
import RangeServer
import Testing

/// The fixture `sample.bin`, read from disk as the reference.
private func sampleBytes() throws -> [UInt8] {
    Array(try #require(FileManager.default.contents(atPath: Fixtures.files + "/sample.bin")))
}

@Suite("Server over the wire: Range")
struct ServerRangeTests {
    @Test(
        "single range forms give 206 with Content-Range a-b/len",
        arguments: [
            ("bytes=0-99", 0, 99), ("bytes=100-", 100, 65535), ("bytes=-100", 65436, 65535),
            ("bytes=65535-65535", 65535, 65535),
            ("bytes=60000-99999", 60000, 65535), ("bytes=-100000", 0, 65535), ("BYTES=5-9", 5, 9), ("bytes=7-7", 7, 7),
        ] as [(String, Int, Int)]
    )
    func singleRange(header: String, first: Int, last: Int) async throws {
        let sample = try sampleBytes()
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try rawRequest(port: server.port, "GET", "/files/sample.bin", headers: ["Range": header])
            #expect(response.status == 206)
            #expect(response.header("content-range") == "bytes \(first)-\(last)/65536")
            #expect(response.header("content-length") == String(last - first + 1))
            #expect(response.header("content-type") == "application/octet-stream")
            #expect(response.body == Array(sample[first...last]))
            #expect(response.ending == .complete)
        }
    }

    @Test("the same range forms on /bytes match the reference")
    func singleRangeGenerated() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let cases: [(String, UInt64, UInt64)] = [
                ("bytes=10-19", 10, 19), ("bytes=99990-", 99990, 99999), ("bytes=-3", 99997, 99999),
            ]
            for (header, first, last) in cases {
                let response = try rawRequest(
                    port: server.port, "GET", "/bytes/100000?seed=8", headers: ["Range": header])
                #expect(response.status == 206)
                #expect(response.header("content-range") == "bytes \(first)-\(last)/100000")
                #expect(response.body == WireCheck.reference(seed: 8, offset: first, count: Int(last - first + 1)))
            }
        }
    }

    /// Fetches `target` with `range` and returns its parts, after checking the multipart framing.
    private func multipart(
        port: Int, _ target: String, range: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [WireCheck.Part] {
        let response = try rawRequest(port: port, "GET", target, headers: ["Range": range])
        try #require(response.status == 206, sourceLocation: sourceLocation)
        #expect(response.header("content-range") == nil, "no top-level Content-Range", sourceLocation: sourceLocation)
        #expect(response.header("content-length") == String(response.body.count), sourceLocation: sourceLocation)
        #expect(response.ending == .complete, sourceLocation: sourceLocation)
        let contentType = try #require(response.header("content-type"), sourceLocation: sourceLocation)
        let boundary = try #require(WireCheck.boundary(fromContentType: contentType), sourceLocation: sourceLocation)
        #expect(!boundary.isEmpty && boundary.count <= 70, sourceLocation: sourceLocation)
        return try WireCheck.parts(of: response.body, boundary: boundary)
    }

    @Test("several ranges give multipart/byteranges, each part with its own Content-Type and Content-Range")
    func multipartBody() async throws {
        let sample = try sampleBytes()
        try await withRangeServer(Fixtures.configuration()) { server in
            let parts = try multipart(port: server.port, "/files/sample.bin", range: "bytes=0-9, 1000-1099,-16")
            try #require(parts.count == 3)
            let expected: [ClosedRange<Int>] = [0...9, 1000...1099, 65520...65535]
            for (part, range) in zip(parts, expected) {
                #expect(part.headers["content-type"] == "application/octet-stream")
                #expect(part.headers["content-range"] == "bytes \(range.lowerBound)-\(range.upperBound)/65536")
                #expect(part.payload == Array(sample[range]))
            }
        }
    }

    @Test("multipart parts over /bytes match the reference, with text types kept per part for files")
    func multipartGeneratedAndText() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let parts = try multipart(port: server.port, "/bytes/1M?seed=4&version=2", range: "bytes=500000-500009,7-8")
            try #require(parts.count == 2)
            #expect(parts[0].headers["content-range"] == "bytes 500000-500009/1048576")
            #expect(parts[0].payload == WireCheck.reference(seed: 4, version: 2, offset: 500_000, count: 10))
            #expect(parts[1].headers["content-range"] == "bytes 7-8/1048576")
            #expect(parts[1].payload == WireCheck.reference(seed: 4, version: 2, offset: 7, count: 2))

            let text = try multipart(port: server.port, "/files/hello.txt", range: "bytes=0-4,6-9")
            try #require(text.count == 2)
            #expect(text.allSatisfy { $0.headers["content-type"]?.hasPrefix("text/plain") == true })
            #expect(String(decoding: text[0].payload, as: UTF8.self) == "Hello")
            #expect(String(decoding: text[1].payload, as: UTF8.self) == "from")
        }
    }

    @Test("overlapping and adjacent ranges are merged, in the order first requested")
    func mergedInRequestOrder() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let parts = try multipart(
                port: server.port, "/bytes/10000", range: "bytes=500-599,0-99,50-149,100-199,600-699"
            )
            #expect(parts.map { $0.headers["content-range"] } == ["bytes 500-699/10000", "bytes 0-199/10000"])
            #expect(parts.first?.payload == WireCheck.reference(offset: 500, count: 200))
            #expect(parts.last?.payload == WireCheck.reference(offset: 0, count: 200))

            // Merged down to one range: a plain 206, not multipart.
            let single = try rawRequest(
                port: server.port, "GET", "/bytes/10000", headers: ["Range": "bytes=10-19,20-29,15-24"])
            #expect(single.status == 206)
            #expect(single.header("content-range") == "bytes 10-29/10000")
            #expect(single.header("content-type") == "application/octet-stream")
            #expect(single.body == WireCheck.reference(offset: 10, count: 20))
        }
    }

    @Test("unsatisfiable members of a list are dropped")
    func partlySatisfiable() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let parts = try multipart(port: server.port, "/bytes/1000", range: "bytes=5000-6000,0-1,-0,998-")
            #expect(parts.map { $0.headers["content-range"] } == ["bytes 0-1/1000", "bytes 998-999/1000"])
            let single = try rawRequest(
                port: server.port, "GET", "/bytes/1000", headers: ["Range": "bytes=5000-,10-12"])
            #expect(single.status == 206)
            #expect(single.header("content-range") == "bytes 10-12/1000")
        }
    }

    @Test("more ranges than maxRanges, or more bytes than the length, give 200 with the whole body")
    func abusiveRanges() async throws {
        try await withRangeServer(Fixtures.configuration { $0.maxRanges = 5 }) { server in
            let five = try multipart(port: server.port, "/bytes/10000", range: "bytes=0-0,10-10,20-20,30-30,40-40")
            #expect(five.count == 5)
            for header in [
                "bytes=0-0,10-10,20-20,30-30,40-40,50-50", "bytes=0-,0-", "bytes=0-9999,-1", "bytes=-6000,0-5000",
            ] {
                let response = try rawRequest(port: server.port, "GET", "/bytes/10000", headers: ["Range": header])
                #expect(response.status == 200, "\(header)")
                #expect(response.header("content-range") == nil)
                #expect(response.body == WireCheck.reference(offset: 0, count: 10000), "\(header)")
            }
        }
    }

    @Test("no satisfiable range gives 416 with Content-Range bytes */len")
    func unsatisfiable() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let cases = [
                ("/files/sample.bin", "bytes=65536-", "65536"), ("/files/sample.bin", "bytes=70000-80000", "65536"),
                ("/bytes/1K", "bytes=-0", "1024"), ("/bytes/1K", "bytes=2000-3000,1024-", "1024"),
                ("/bytes/0", "bytes=0-", "0"), ("/bytes/1T", "bytes=\(UInt64(1) << 40)-", String(UInt64(1) << 40)),
            ]
            for (target, header, length) in cases {
                let response = try rawRequest(port: server.port, "GET", target, headers: ["Range": header])
                #expect(response.status == 416, "\(target) \(header)")
                #expect(response.header("content-range") == "bytes */\(length)", "\(target) \(header)")
                #expect(response.ending == .complete)
            }
        }
    }

    @Test(
        "a syntactically invalid Range or another unit is ignored: 200",
        arguments: [
            "bytes=5-2", "bytes=abc", "bytes 0-1", "bytes=", "bytes=0-1;", "bytes=--1", "bytes = 0-1", "bytes=1-2-3",
            "items=0-5", "none", "bytes=0x10-20", "bytes=99999999999999999999999-",
        ]
    )
    func invalidRange(header: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try rawRequest(port: server.port, "GET", "/bytes/2K", headers: ["Range": header])
            #expect(response.status == 200)
            #expect(response.header("content-range") == nil)
            #expect(response.body == WireCheck.reference(offset: 0, count: 2048))
        }
    }

    @Test("Range is ignored on HEAD and on non-GET methods")
    func rangeOnOtherMethods() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let head = try rawRequest(port: server.port, "HEAD", "/bytes/2K", headers: ["Range": "bytes=0-9"])
            #expect(head.status == 200)
            #expect(head.header("content-length") == "2048")
            #expect(head.header("content-range") == nil)
            let unsatisfiableHead = try rawRequest(
                port: server.port, "HEAD", "/bytes/2K", headers: ["Range": "bytes=9999-"])
            #expect(unsatisfiableHead.status == 200)
            for method in ["POST", "PUT", "DELETE"] {
                let response = try rawRequest(
                    port: server.port, method, "/bytes/2K", headers: ["Range": "bytes=0-9", "Content-Length": "0"]
                )
                #expect(response.status == 405)
                #expect(response.header("content-range") == nil)
            }
        }
    }
}
