/// A line and column in a text file, both 1-based; columns count Unicode scalars.
struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    var line: Int
    var column: Int

    var description: String { "\(line):\(column)" }
}

/// A parsed JSON value that remembers where it was written, so the scenario loader can report
/// the line of a semantically bad value, not just of a syntax error.
///
/// Foundation's parsers give neither lines nor duplicate-key detection, hence this small parser.
struct LocatedJSON: Hashable, Sendable {
    /// One object member; `keyLocation` is where the key's opening quote is.
    struct Member: Hashable, Sendable {
        var key: String
        var keyLocation: SourceLocation
        var value: LocatedJSON
    }

    indirect enum Kind: Hashable, Sendable {
        case null
        case bool(Bool)
        /// The number's text exactly as written, so `2400` reaches the fault parser as "2400".
        case number(String)
        case string(String)
        case array([LocatedJSON])
        /// Members in file order.
        case object([Member])
    }

    var location: SourceLocation
    var kind: Kind

    /// A short name of the kind, for "expected an object, found a string" messages.
    var kindName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON syntax error at a place in the text.
struct JSONSyntaxError: Error, Sendable {
    var location: SourceLocation
    var reason: String
}

/// A strict RFC 8259 recursive-descent parser over UTF-8 bytes that tracks lines and columns.
struct LocatedJSONParser {
    /// Deep enough for any scenario, shallow enough that a hostile file cannot overflow the stack.
    private static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0

    /// Parses one JSON document; trailing non-whitespace is an error. A UTF-8 byte order mark is skipped.
    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> LocatedJSON {
        var parser = LocatedJSONParser(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            parser.index = 3
            parser.lineStart = 3
        }
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private var location: SourceLocation {
        // Count scalars, not bytes: UTF-8 continuation bytes (10xxxxxx) do not start a column.
        let column = bytes[lineStart..<index].reduce(1) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
        return SourceLocation(line: line, column: column)
    }

    private func error(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(location: location, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private var currentDescription: String {
        guard let current else { return "end of file" }
        if current >= 0x21, current < 0x7F { return "'\(Character(Unicode.Scalar(current)))'" }
        return "byte 0x\(String(current, radix: 16, uppercase: true))"
    }

    private mutating func skipWhitespace() {
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\n"):
                index += 1
                line += 1
                lineStart = index
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            default:
                return
            }
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> LocatedJSON {
        let start = location
        guard let byte = current else { throw error("expected a JSON value, found end of file") }
        switch byte {
        case UInt8(ascii: "{"): return LocatedJSON(location: start, kind: try parseObject())
        case UInt8(ascii: "["): return LocatedJSON(location: start, kind: try parseArray())
        case UInt8(ascii: "\""): return LocatedJSON(location: start, kind: .string(try parseString()))
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return LocatedJSON(location: start, kind: .bool(true))
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return LocatedJSON(location: start, kind: .bool(false))
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return LocatedJSON(location: start, kind: .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return LocatedJSON(location: start, kind: .number(try parseNumber()))
        default:
            throw error("expected a JSON value, found \(currentDescription)")
        }
    }

    private mutating func expectLiteral(_ literal: String) throws(JSONSyntaxError) {
        // Blame the literal's first character: "tru" is one mistake, not one at its end.
        let start = location
        for expected in literal.utf8 {
            guard current == expected else {
                throw JSONSyntaxError(location: start, reason: "invalid literal, expected '\(literal)'")
            }
            index += 1
        }
    }

    private mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> LocatedJSON.Kind {
        try enterContainer()
        index += 1
        var members: [LocatedJSON.Member] = []
        var seen: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes, found \(currentDescription)")
            }
            let keyLocation = location
            let key = try parseString()
            guard seen.insert(key).inserted else {
                throw JSONSyntaxError(location: keyLocation, reason: "duplicate key \"\(key)\"")
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else {
                throw error("expected ':' after \"\(key)\", found \(currentDescription)")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(LocatedJSON.Member(key: key, keyLocation: keyLocation, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            default:
                throw error("expected ',' or '}' after a member, found \(currentDescription)")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> LocatedJSON.Kind {
        try enterContainer()
        index += 1
        var items: [LocatedJSON] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(items)
            default:
                throw error("expected ',' or ']' after an array element, found \(currentDescription)")
            }
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var output: [UInt8] = []
        while true {
            guard let byte = current else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                // Reject invalid UTF-8 rather than silently substituting U+FFFD into a key or value.
                guard let text = String(validating: output, as: UTF8.self) else {
                    throw error("string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &output)
            case 0..<0x20:
                throw error("control character in string (line breaks must be written as \\n)")
            default:
                output.append(byte)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into output: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = current else { throw error("unterminated string") }
        index += 1
        let simple: UInt8? =
            switch byte {
            case UInt8(ascii: "\""): UInt8(ascii: "\"")
            case UInt8(ascii: "\\"): UInt8(ascii: "\\")
            case UInt8(ascii: "/"): UInt8(ascii: "/")
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            output.append(simple)
            return
        }
        guard byte == UInt8(ascii: "u") else { throw error("invalid escape '\\\(Character(Unicode.Scalar(byte)))'") }
        var code = try parseHex4()
        if (0xD800..<0xDC00).contains(code) {
            // A high surrogate must be followed by an escaped low surrogate to form one scalar.
            guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate in \\u escape")
            }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(code) else { throw error("unpaired surrogate in \\u escape") }
        output.append(contentsOf: Array(String(Character(scalar)).utf8))
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Self.hexDigit(byte) else {
                throw error("expected four hex digits in \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        let startLocation = location
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
            if let next = current, Self.isDigit(next) {
                throw JSONSyntaxError(location: startLocation, reason: "leading zeros are not allowed in numbers")
            }
        } else {
            guard skipDigits() > 0 else { throw error("expected a digit") }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() > 0 else { throw error("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw error("expected a digit in the exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func skipDigits() -> Int {
        let start = index
        while let byte = current, Self.isDigit(byte) { index += 1 }
        return index - start
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
