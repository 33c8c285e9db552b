import HTTPVocabulary

/// One element of a `Range: bytes=...` header, as written by the client and not yet resolved against a length.
///
/// See RFC 9110 §14.1.1. Resolution against a representation happens in ``RangeHeader/evaluate(length:maxRanges:)``.
package enum ByteRangeSpec: Hashable, Sendable {
    /// `first-last`: both positions inclusive; the parser guarantees `last >= first`.
    case closed(first: UInt64, last: UInt64)
    /// `first-`: from `first` to the end of the representation.
    case from(first: UInt64)
    /// `-length`: the final `length` bytes of the representation.
    case suffix(length: UInt64)
}

/// A parsed `Range` header field using the `bytes` range unit.
///
/// The specs are kept exactly in request order, duplicates and overlaps included, because the evaluation rules
/// (range count limits, overlap accounting) depend on what the client actually sent.
package struct RangeHeader: Hashable, Sendable {
    /// The range specs in the order they appeared, empty list elements removed.
    public var specs: [ByteRangeSpec]

    /// Creates a header from already parsed specs.
    ///
    /// - Parameter specs: The specs in request order.
    public init(specs: [ByteRangeSpec]) {
        self.specs = specs
    }

    /// Parses a `Range` field value per RFC 9110 §14.1.1.
    ///
    /// Accepts the `bytes` unit in any letter case, then `=` and a comma-separated list in which optional whitespace
    /// may surround the commas and empty elements are skipped (`bytes=0-1,,2-3`). Whitespace is not allowed around
    /// `=` or inside a spec. The scan is a single linear pass, so hostile headers with thousands of elements cost
    /// only their length.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: The parsed header, or `nil` when the value is malformed, uses another unit, has no spec at all, or
    ///   holds a number that does not fit in `UInt64`. A server ignores the `Range` field in that case.
    public static func parse(_ value: String) -> RangeHeader? {
        RangeSpecs(parsing: value).map { RangeHeader(specs: $0.all) }
    }
}

/// The specs of a parsed `Range` field with the first held inline, as the server's own decision reads them: a
/// single-range request, nearly every request, is then parsed and evaluated without allocating an array.
struct RangeSpecs: Hashable, Sendable {
    /// The first spec.
    var first: ByteRangeSpec
    /// The specs after the first, in request order; empty, and unallocated, for a single range.
    var rest: [ByteRangeSpec] = []

    /// All specs in request order.
    var all: [ByteRangeSpec] { [first] + rest }

    /// Parses a `Range` field value exactly as ``RangeHeader/parse(_:)`` does.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: nil where ``RangeHeader/parse(_:)`` returns nil.
    init?(parsing value: String) {
        var value = value
        guard let specs = value.withUTF8(Self.parse(bytes:)) else { return nil }
        self = specs
    }

    /// One spec so far.
    private init(first: ByteRangeSpec) {
        self.first = first
    }

    /// The specs of a field value's bytes, or nil when it is malformed or lists none.
    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> RangeSpecs? {
        var scanner = RangeScanner(bytes: bytes)
        scanner.trimOptionalWhitespace()
        guard scanner.consumeBytesUnit(), scanner.consume(UInt8(ascii: "=")) else { return nil }

        var specs: RangeSpecs?
        func add(_ spec: ByteRangeSpec) {
            if specs == nil {
                specs = RangeSpecs(first: spec)
            } else {
                specs!.rest.append(spec)
            }
        }
        // `#element => [ element ] *( OWS "," OWS [ element ] )`: an element may be absent anywhere, but between two
        // elements there must be a comma.
        if scanner.startsSpec {
            guard let spec = scanner.scanSpec() else { return nil }
            add(spec)
        }
        while !scanner.isAtEnd {
            scanner.skipOptionalWhitespace()
            guard scanner.consume(UInt8(ascii: ",")) else { return nil }
            scanner.skipOptionalWhitespace()
            if scanner.startsSpec {
                guard let spec = scanner.scanSpec() else { return nil }
                add(spec)
            }
        }
        return specs
    }
}

/// A forward-only cursor over the bytes of a `Range` field value.
private struct RangeScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int
    var end: Int

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.index = 0
        self.end = bytes.count
    }

    var isAtEnd: Bool { index >= end }

    var startsSpec: Bool {
        guard !isAtEnd else { return false }
        let byte = bytes[index]
        return byte == UInt8(ascii: "-") || isDigit(byte)
    }

    /// Drops leading and trailing OWS of the whole field value, which HTTP framing does not count as content.
    mutating func trimOptionalWhitespace() {
        while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
        while end > index, isOptionalWhitespace(bytes[end - 1]) { end -= 1 }
    }

    mutating func skipOptionalWhitespace() {
        while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
    }

    mutating func consume(_ byte: UInt8) -> Bool {
        guard index < end, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Range units are case-insensitive tokens (RFC 9110 §14.1); only `bytes` is supported.
    mutating func consumeBytesUnit() -> Bool {
        // A static string, not an array: this runs for every request with a Range header.
        let unit: StaticString = "bytes"
        let count = unit.utf8CodeUnitCount
        guard end - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] | 0x20 != unit.utf8Start[offset] {
            return false
        }
        index += count
        return true
    }

    mutating func scanSpec() -> ByteRangeSpec? {
        if consume(UInt8(ascii: "-")) {
            guard let length = scanNumber() else { return nil }
            return .suffix(length: length)
        }
        guard let first = scanNumber(), consume(UInt8(ascii: "-")) else { return nil }
        guard index < end, isDigit(bytes[index]) else { return .from(first: first) }
        guard let last = scanNumber(), last >= first else { return nil }
        return .closed(first: first, last: last)
    }

    /// Reads one or more digits; `nil` when there are none or the value overflows.
    mutating func scanNumber() -> UInt64? {
        let start = index
        var value: UInt64 = 0
        while index < end, isDigit(bytes[index]) {
            let (times10, overflowMultiply) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowAdd) = times10.addingReportingOverflow(UInt64(bytes[index] &- UInt8(ascii: "0")))
            guard !overflowMultiply, !overflowAdd else { return nil }
            value = sum
            index += 1
        }
        return index > start ? value : nil
    }
}

private func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
}
