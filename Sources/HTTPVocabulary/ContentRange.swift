/// A `Content-Range` field value in the `bytes` unit (RFC 9110 §14.4): `bytes first-last/complete`,
/// `bytes first-last/*`, or `bytes */complete` (the unsatisfied form a 416 carries).
public struct ContentRange: Hashable, Sendable {
    /// The first byte position, `nil` for the unsatisfied form `*/N`.
    public var first: Int64?
    /// The last byte position (inclusive), `nil` for the unsatisfied form.
    public var last: Int64?
    /// The complete length, `nil` when the sender wrote `*`.
    public var complete: Int64?

    /// Creates a value without checking that its parts agree.
    ///
    /// - Parameters:
    ///   - first: The first byte position, `nil` for the unsatisfied form.
    ///   - last: The last byte position (inclusive), `nil` for the unsatisfied form.
    ///   - complete: The complete length, `nil` when unknown.
    public init(first: Int64?, last: Int64?, complete: Int64?) {
        self.first = first
        self.last = last
        self.complete = complete
    }

    /// Parses a field value, ignoring surrounding whitespace; the unit is matched case-insensitively.
    ///
    /// - Parameter value: The raw field value.
    /// - Returns: `nil` for another unit, a malformed value, `last < first`, `last >= complete`, or `*/*`.
    public init?(parsing value: String) {
        var bytes = Substring(value).utf8[...]
        while let byte = bytes.first, isOptionalWhitespace(byte) { bytes.removeFirst() }
        while let byte = bytes.last, isOptionalWhitespace(byte) { bytes.removeLast() }
        guard bytes.count > 6, asciiCaseInsensitiveEqual(bytes.prefix(6), "bytes ".utf8) else { return nil }
        bytes.removeFirst(6)
        while let byte = bytes.first, isOptionalWhitespace(byte) { bytes.removeFirst() }
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let rangePart = bytes[..<slash]
        let lengthPart = bytes[bytes.index(after: slash)...]
        var complete: Int64?
        if !lengthPart.elementsEqual("*".utf8) {
            guard let length = decimal(lengthPart) else { return nil }
            complete = length
        }
        if rangePart.elementsEqual("*".utf8) {
            guard complete != nil else { return nil }
            self.init(first: nil, last: nil, complete: complete)
            return
        }
        guard let dash = rangePart.firstIndex(of: UInt8(ascii: "-")),
            let first = decimal(rangePart[..<dash]),
            let last = decimal(rangePart[rangePart.index(after: dash)...]), first <= last
        else { return nil }
        if let complete, last >= complete { return nil }
        self.init(first: first, last: last, complete: complete)
    }

    /// The value as a sender writes it.
    public var headerValue: String {
        switch (first, last, complete) {
        case (let first?, let last?, let complete?) where first >= 0 && first <= last && complete >= 0:
            Self.headerValue(UInt64(first)...UInt64(last), completeLength: UInt64(complete))
        case (let first?, let last?, nil):
            "bytes \(first)-\(last)/*"
        case (_, _, let complete?):
            Self.unsatisfied(completeLength: UInt64(max(complete, 0)))
        default:
            "bytes */*"
        }
    }

    /// `bytes FIRST-LAST/LENGTH`, the value a 206 carries.
    ///
    /// Written into a stack buffer from its end and made a string once: every ranged response formats one, and
    /// interpolating the three numbers built and appended three intermediate strings. Written backwards, each
    /// number's digits come out of its divisions by ten in the order they are stored, so no pass counts them first.
    ///
    /// - Parameters:
    ///   - range: The byte positions sent, inclusive.
    ///   - completeLength: The representation's length.
    @inlinable
    public static func headerValue(_ range: ClosedRange<UInt64>, completeLength: UInt64) -> String {
        // "bytes " + three numbers of at most 20 digits + two separators.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 72) { buffer in
            var start = buffer.count
            func put(_ byte: UInt8) {
                start -= 1
                buffer[start] = byte
            }
            func put(_ value: UInt64) {
                var rest = value
                repeat {
                    put(UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0"))
                    rest /= 10
                } while rest > 0
            }
            put(completeLength)
            put(UInt8(ascii: "/"))
            put(range.upperBound)
            put(UInt8(ascii: "-"))
            put(range.lowerBound)
            let unit: StaticString = "bytes "
            for index in (0..<unit.utf8CodeUnitCount).reversed() { put(unit.utf8Start[index]) }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start...]), as: UTF8.self)
        }
    }

    /// `bytes */LENGTH`, the value a 416 carries.
    ///
    /// - Parameter completeLength: The representation's length.
    public static func unsatisfied(completeLength: UInt64) -> String {
        "bytes */\(completeLength)"
    }
}

/// A non-negative decimal of 1 to 18 ASCII digits, so it always fits in `Int64`.
private func decimal(_ digits: Substring.UTF8View.SubSequence) -> Int64? {
    guard !digits.isEmpty, digits.count <= 18 else { return nil }
    var value: Int64 = 0
    for byte in digits {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int64(byte - UInt8(ascii: "0"))
    }
    return value
}
