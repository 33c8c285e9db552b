import HTTPVocabulary

/// The layout of a `multipart/byteranges` body (RFC 9110 §14.6), planned without holding any payload.
///
/// The body is a list of segments: literal framing bytes and references to byte ranges of the representation, which
/// the sender streams from its source. Each part is
/// `CRLF --BOUNDARY CRLF Content-Type: T CRLF Content-Range: bytes a-b/len CRLF CRLF <payload>`, and the body ends
/// with `CRLF --BOUNDARY-- CRLF`. The first part also starts with CRLF; RFC 2046 treats that CRLF as part of the
/// delimiter, so the body simply has an empty preamble and every part is framed the same way.
package struct MultipartByteranges: Hashable, Sendable {
    /// One piece of the body, in sending order.
    public enum Segment: Hashable, Sendable {
        /// Framing bytes sent as they are.
        case literal([UInt8])
        /// The representation bytes in this inclusive range.
        case payload(ClosedRange<UInt64>)

        /// The number of bytes this segment contributes to the body.
        public var length: UInt64 {
            switch self {
            case .literal(let bytes):
                return UInt64(bytes.count)
            case .payload(let range):
                return range.upperBound - range.lowerBound + 1
            }
        }
    }

    /// The value for the response's `Content-Type` field.
    public var contentTypeHeader: String
    /// The body in sending order: framing literals alternating with payload ranges.
    public var segments: [Segment]
    /// The exact body length, which is the `Content-Length` of the response.
    public var totalLength: UInt64

    /// Plans the body for the given ranges.
    ///
    /// - Parameters:
    ///   - ranges: The ranges in the order they are sent; each must lie within `0..<completeLength`.
    ///   - completeLength: The length of the whole representation, shown after the `/` in every `Content-Range`.
    ///   - contentType: The representation's media type, repeated in each part; an empty string omits the field.
    ///   - boundary: The delimiter; it must not occur in the payload, which ``makeBoundary(seed:)`` makes unlikely.
    public init(ranges: [ClosedRange<UInt64>], completeLength: UInt64, contentType: String, boundary: String) {
        contentTypeHeader = "multipart/byteranges; boundary=\(boundary)"
        let typeLine = contentType.isEmpty ? "" : "Content-Type: \(contentType)\r\n"
        var segments: [Segment] = []
        segments.reserveCapacity(ranges.count * 2 + 1)
        for range in ranges {
            let head =
                "\r\n--\(boundary)\r\n\(typeLine)"
                + "Content-Range: \(ContentRange.headerValue(range, completeLength: completeLength))\r\n\r\n"
            segments.append(.literal(Array(head.utf8)))
            segments.append(.payload(range))
        }
        segments.append(.literal(Array("\r\n--\(boundary)--\r\n".utf8)))
        self.segments = segments
        totalLength = segments.reduce(0) { $0 + $1.length }
    }

    /// Makes a boundary of 32 lowercase hex digits after a fixed prefix, deterministic for a given seed.
    ///
    /// Hex digits are valid `bchars` that never need quoting in the `Content-Type` parameter, and 128 mixed bits make
    /// a collision with payload bytes negligible. The mixing is SplitMix64, so nearby seeds give unrelated
    /// boundaries.
    ///
    /// - Parameter seed: Any value; the same seed always yields the same boundary.
    /// - Returns: A 44-character boundary such as `rangeserver-3c6ef372fe94f82b9e3779b97f4a7c15`.
    public static func makeBoundary(seed: UInt64) -> String {
        var state = seed
        let high = splitMix64(&state)
        let low = splitMix64(&state)
        return "rangeserver-" + hex(high) + hex(low)
    }

    private static func splitMix64(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
