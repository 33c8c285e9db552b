extension RunTrace {
    /// A half-open run of byte offsets in the resource, `start..<end`, written inclusively (`0-1048575`) as HTTP
    /// writes ranges.
    ///
    /// Its own type rather than `Range<UInt64>` so the JSON says `{"start": 0, "end": 1048576}`, not an array.
    public struct ByteSpan: Codable, Hashable, Sendable, CustomStringConvertible {
        /// The first offset.
        public var start: UInt64
        /// One past the last offset.
        public var end: UInt64

        /// Makes a span.
        ///
        /// - Parameters:
        ///   - start: the first offset.
        ///   - end: one past the last offset; below `start` it is taken as `start`.
        public init(start: UInt64, end: UInt64) {
            self.start = start
            self.end = max(start, end)
        }

        /// Makes a span from a range.
        ///
        /// - Parameters:
        ///   - range: the offsets.
        public init(_ range: Range<UInt64>) { self.init(start: range.lowerBound, end: range.upperBound) }

        /// The offsets as a range.
        public var range: Range<UInt64> { start..<end }
        /// How many bytes.
        public var count: UInt64 { end - start }
        /// `first-last`, as in a Range header; `empty at N` for no bytes.
        public var description: String { end > start ? "\(start)-\(end - 1)" : "empty at \(start)" }

        /// The spans a Range header asks for, resolved against the resource's length the way a server would:
        /// `bytes=S-` runs to the end, `bytes=-N` is the last N bytes, a last offset past the end is cut at the end.
        ///
        /// A range that cannot be read, or starts at or past the end, is left out: the picture shows what could be
        /// served, and the header itself is kept beside it.
        ///
        /// - Parameters:
        ///   - header: the Range header's value, e.g. `bytes=1048576-` or `bytes=0-99,200-299`.
        ///   - length: the resource's length.
        /// - Returns: the spans in the header's order.
        public static func requested(by header: String, length: UInt64) -> [ByteSpan] {
            guard header.lowercased().hasPrefix("bytes=") else { return [] }
            return header.dropFirst(6).split(separator: ",").compactMap { part -> ByteSpan? in
                let spec = part.filter { $0 != " " && $0 != "\t" }
                guard let dash = spec.firstIndex(of: "-") else { return nil }
                let first = spec[..<dash]
                let last = spec[spec.index(after: dash)...]
                if first.isEmpty {
                    guard let suffix = UInt64(last), suffix > 0, length > 0 else { return nil }
                    return ByteSpan(start: length - min(suffix, length), end: length)
                }
                guard let start = UInt64(first), start < length else { return nil }
                if last.isEmpty { return ByteSpan(start: start, end: length) }
                guard let end = UInt64(last), end >= start else { return nil }
                return ByteSpan(start: start, end: min(end, length - 1) + 1)
            }
        }
    }
}
