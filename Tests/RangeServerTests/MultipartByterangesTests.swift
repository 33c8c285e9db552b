import RangeServer
import Testing

@Suite("multipart/byteranges planning")
struct MultipartByterangesTests {
    /// Renders a plan against an in-memory payload, the way the daemon layer streams it.
    private func render(_ plan: MultipartByteranges, payload: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        for segment in plan.segments {
            switch segment {
            case .literal(let bytes):
                body += bytes
            case .payload(let range):
                body += payload[Int(range.lowerBound)...Int(range.upperBound)]
            }
        }
        return body
    }

    @Test("the body matches RFC 9110 §14.6 byte for byte")
    func exactLayout() {
        let payload = Array("0123456789abcdefghij".utf8)
        let plan = MultipartByteranges(
            ranges: [0...3, 10...11], completeLength: 20, contentType: "text/plain", boundary: "B0UND")
        let expected =
            "\r\n--B0UND\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-3/20\r\n\r\n0123"
            + "\r\n--B0UND\r\nContent-Type: text/plain\r\nContent-Range: bytes 10-11/20\r\n\r\nab"
            + "\r\n--B0UND--\r\n"
        let body = render(plan, payload: payload)
        #expect(String(decoding: body, as: UTF8.self) == expected)
        #expect(plan.totalLength == UInt64(body.count))
        #expect(plan.contentTypeHeader == "multipart/byteranges; boundary=B0UND")
        #expect(plan.segments.count == 5)
        #expect(plan.segments[1] == .payload(0...3))
        #expect(plan.segments[3] == .payload(10...11))
        // Plans are values: equal inputs give equal plans, and the boundary takes part in equality.
        #expect(
            plan
                == MultipartByteranges(
                    ranges: [0...3, 10...11], completeLength: 20, contentType: "text/plain", boundary: "B0UND"))
        #expect(
            plan
                != MultipartByteranges(
                    ranges: [0...3, 10...11], completeLength: 20, contentType: "text/plain", boundary: "B1"))
    }

    @Test("an empty content type omits the part's Content-Type field")
    func emptyContentType() {
        let plan = MultipartByteranges(ranges: [2...2], completeLength: 5, contentType: "", boundary: "x")
        let body = render(plan, payload: Array("hello".utf8))
        #expect(String(decoding: body, as: UTF8.self) == "\r\n--x\r\nContent-Range: bytes 2-2/5\r\n\r\nl\r\n--x--\r\n")
        #expect(plan.totalLength == UInt64(body.count))
    }

    @Test("parts keep the order they were given")
    func keepsOrder() {
        let plan = MultipartByteranges(ranges: [8...9, 0...1], completeLength: 10, contentType: "a/b", boundary: "q")
        let payloads = plan.segments.compactMap { segment -> ClosedRange<UInt64>? in
            if case .payload(let range) = segment { return range }
            return nil
        }
        #expect(payloads == [8...9, 0...1])
    }

    @Test("total length is exact for 1 TiB payload ranges past 2^32")
    func largeRanges() {
        let tebibyte: UInt64 = 1 << 40
        let ranges: [ClosedRange<UInt64>] = [0...(1 << 32), (tebibyte - 10)...(tebibyte - 1)]
        let plan = MultipartByteranges(
            ranges: ranges, completeLength: tebibyte, contentType: "application/octet-stream", boundary: "b")
        let literalBytes = plan.segments.reduce(UInt64(0)) { sum, segment in
            if case .literal(let bytes) = segment { return sum + UInt64(bytes.count) }
            return sum
        }
        #expect(plan.totalLength == literalBytes + (1 << 32) + 1 + 10)
        #expect(plan.totalLength == plan.segments.reduce(0) { $0 + $1.length })
        let firstHead = plan.segments.first.map { segment -> String in
            guard case .literal(let bytes) = segment else { return "" }
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(firstHead?.contains("Content-Range: bytes 0-4294967296/1099511627776\r\n") == true)
    }

    @Test("a plan with no ranges is just the closing delimiter")
    func noRanges() {
        let plan = MultipartByteranges(ranges: [], completeLength: 0, contentType: "a/b", boundary: "z")
        #expect(plan.segments == [.literal(Array("\r\n--z--\r\n".utf8))])
        #expect(plan.totalLength == 9)
    }

    @Test("boundaries are deterministic, distinct and made of safe characters")
    func boundaries() {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyz-")
        var seen = Set<String>()
        for seed in [0, 1, 2, 3, 42, UInt64.max, 1 << 63] as [UInt64] {
            let boundary = MultipartByteranges.makeBoundary(seed: seed)
            #expect(boundary == MultipartByteranges.makeBoundary(seed: seed))
            #expect(boundary.count >= 16 && boundary.count <= 70)  // RFC 2046 allows 1 to 70.
            #expect(boundary.allSatisfy { allowed.contains($0) })
            seen.insert(boundary)
        }
        #expect(seen.count == 7)
    }
}
