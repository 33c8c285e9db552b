#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
                guard let high = iterator.next().flatMap(QueryString.hexValue),
                    let low = iterator.next().flatMap(QueryString.hexValue)
                else {
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
}

/// The text in a NUL-terminated C buffer (as filled by realpath or inet_ntop).
func stringFromCBuffer(_ buffer: [CChar]) -> String {
    let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
    return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The canonical absolute path of `path` with every symlink resolved, or nil when it does not exist.
///
/// Lets libc allocate the exact result instead of zeroing a PATH_MAX buffer per request.
func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
