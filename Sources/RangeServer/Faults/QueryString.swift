/// Splits a URL query string into decoded key/value pairs.
///
/// Lenient on purpose: the fault parser, not this splitter, decides what is an error, and it can
/// only name a bad key or value in its 400 message if the splitter hands everything over.
package enum QueryString {
    /// Splits and decodes a raw query string.
    ///
    /// - Parameters:
    ///   - raw: the part after `?` (a leading `?` is tolerated), for example `drop-after=2400K&seed=7`.
    /// - Returns: the pairs in order. Parts are split on `&`, then on the first `=` (a part without `=`
    ///   has an empty value); empty parts are skipped; `+` decodes to a space and `%XX` to its byte;
    ///   a malformed `%` escape is kept literally; bytes that are not UTF-8 become U+FFFD.
    public static func parse(_ raw: String) -> [(key: String, value: String)] {
        var text = Substring(raw)
        if text.first == "?" { text = text.dropFirst() }
        var pairs: [(key: String, value: String)] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = decode(pieces[0])
            let value = pieces.count > 1 ? decode(pieces[1]) : ""
            pairs.append((key: key, value: value))
        }
        return pairs
    }

    /// Percent-decodes one component, treating `+` as a space (form encoding, as browsers send it).
    ///
    /// - Parameters:
    ///   - component: a key or value as it appears in the raw query.
    /// - Returns: the decoded text; malformed `%` escapes are kept literally.
    public static func decode(_ component: Substring) -> String {
        let bytes = Array(component.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                let low = hexValue(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The value of one hexadecimal digit, or nil. Shared with the path decoder.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
