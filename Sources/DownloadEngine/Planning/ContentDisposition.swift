import Foundation

/// The file name a `Content-Disposition` field gives (RFC 6266 §4), as sent: not yet sanitised (see ``OutputName``).
///
/// `filename*` (an RFC 8187 ext-value, `charset'language'percent-encoded`) wins over `filename` when both are there
/// and it decodes (RFC 6266 §4.3); a `filename*` that does not decode (unknown charset, bad percent-encoding, bytes
/// that are not UTF-8) is ignored and `filename` used. `filename` is a token or a quoted string with backslash
/// escapes; its value is taken as it is (raw UTF-8 included, percent signs not decoded, as curl and wget do). The
/// first of a repeated parameter counts. A parameter that cannot be read ends the parse: the parameters before it
/// still count.
enum ContentDisposition {
    /// The file name in a `Content-Disposition` value, or `nil` when there is none.
    ///
    /// - Parameter value: The field value, e.g. `attachment; filename="a.bin"; filename*=UTF-8''%C3%A9.bin`.
    /// - Returns: The name as given (directories and all), `nil` when no parameter names a non-empty one.
    static func filename(_ value: String) -> String? {
        let parameters = Self.parameters(value)
        if let extended = parameters.first(where: { $0.name == "filename*" }),
            let decoded = decodeExtValue(extended.value), !decoded.isEmpty
        {
            return decoded
        }
        if let plain = parameters.first(where: { $0.name == "filename" }), !plain.value.isEmpty {
            return plain.value
        }
        return nil
    }

    /// The parameters of a value, names lower-cased, in order; the disposition type is skipped (a value whose first
    /// part is already `name=value` has none, and that part counts as a parameter).
    static func parameters(_ value: String) -> [(name: String, value: String)] {
        var scanner = Scanner(Array(value.unicodeScalars))
        var result: [(name: String, value: String)] = []
        // The disposition type is a token; anything before the first ';' without an '=' is taken for it.
        let start = scanner.index
        scanner.skip { $0 != ";" && $0 != "=" }
        if scanner.peek == "=" { scanner.index = start }
        while !scanner.atEnd {
            scanner.skip { $0 == ";" || $0 == " " || $0 == "\t" }
            if scanner.atEnd { break }
            let name = scanner.take { $0 != "=" && $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
            guard scanner.peek == "=" else {
                // A parameter without a value: skip it.
                continue
            }
            scanner.index += 1
            scanner.skip { $0 == " " || $0 == "\t" }
            let parameterValue: String
            if scanner.peek == "\"" {
                scanner.index += 1
                guard let quoted = scanner.quotedString() else { return result }
                parameterValue = quoted
                // Anything between the closing quote and the next ';' is not part of the value.
                scanner.skip { $0 != ";" }
            } else {
                parameterValue = scanner.take { $0 != ";" }.trimmingCharacters(in: .whitespaces)
            }
            if !name.isEmpty { result.append((name, parameterValue)) }
        }
        return result
    }

    /// Decodes an RFC 8187 ext-value (`UTF-8''%e2%82%ac%20rates.txt`); `nil` for an unknown charset, a malformed
    /// percent-encoding or bytes that are not valid in the charset. UTF-8 and ISO-8859-1 are the charsets RFC 8187
    /// requires; their names are case-insensitive.
    static func decodeExtValue(_ text: String) -> String? {
        let parts = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        guard charset == "utf-8" || charset == "iso-8859-1" else { return nil }
        var bytes: [UInt8] = []
        var utf8 = Array(parts[2].utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let high = hexValue(utf8.removeFirst()), let low = hexValue(utf8.removeFirst())
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        if charset == "iso-8859-1" {
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        }
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

    /// A cursor over a field value's scalars.
    private struct Scanner {
        let scalars: [Unicode.Scalar]
        var index = 0

        init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

        var atEnd: Bool { index >= scalars.count }
        var peek: Unicode.Scalar? { atEnd ? nil : scalars[index] }

        mutating func skip(while condition: (Unicode.Scalar) -> Bool) {
            while let scalar = peek, condition(scalar) { index += 1 }
        }

        mutating func take(while condition: (Unicode.Scalar) -> Bool) -> String {
            let start = index
            skip(while: condition)
            return String(String.UnicodeScalarView(scalars[start..<index]))
        }

        /// The rest of a quoted string whose opening quote was read: up to the closing quote (read too), with
        /// `\x` standing for `x`; `nil` when it never closes.
        mutating func quotedString() -> String? {
            var text = String.UnicodeScalarView()
            while let scalar = peek {
                index += 1
                switch scalar {
                case "\"": return String(text)
                case "\\":
                    guard let escaped = peek else { return nil }
                    index += 1
                    text.append(escaped)
                default: text.append(scalar)
                }
            }
            return nil
        }
    }
}
