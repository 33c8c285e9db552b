/// Turns the encoded path under `/files/` into components that cannot leave the root.
///
/// This is the lexical half of the containment check; the server then resolves symlinks and checks the
/// real path is still under the real root.
enum SafePath {
    /// The decoded path components, or nil when the path is not acceptable.
    ///
    /// Refused: an encoded slash or backslash (`%2f`, `%5c`), NUL bytes, invalid or incomplete percent
    /// escapes, empty segments, `.` and `..` segments, and anything that is not valid UTF-8 once decoded.
    static func components(_ encoded: Substring) -> [String]? {
        guard !encoded.isEmpty else { return nil }
        var components: [String] = []
        // Split and compare bytes, not Characters: a "/" or "\\" followed by a combining mark is one grapheme
        // cluster, so a Character-level split or search would leave the separator inside a component.
        for rawSegment in encoded.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard !rawSegment.isEmpty, let segment = decode(rawSegment) else { return nil }
            let bytes = segment.utf8
            guard !bytes.elementsEqual(".".utf8), !bytes.elementsEqual("..".utf8), !bytes.contains(UInt8(ascii: "\\"))
            else { return nil }
            components.append(segment)
        }
        return components
    }

    private static func decode(_ segment: Substring.UTF8View) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.count)
        var iterator = segment.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                let decoded = high << 4 | low
                // An encoded separator would smuggle a path boundary past the split above.
                guard decoded != UInt8(ascii: "/") else { return nil }
                bytes.append(decoded)
            } else {
                bytes.append(byte)
            }
        }
        guard !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The text in a NUL-terminated C buffer (as filled by realpath or inet_ntop).
func stringFromCBuffer(_ buffer: [CChar]) -> String {
    let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
    return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
