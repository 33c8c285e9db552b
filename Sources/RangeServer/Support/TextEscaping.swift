/// Escaping for the text formats the server and the harness write by hand: the journal's JSON, HTML and XML.
///
/// The package's one JSON string escaper (everything else goes through `JSONEncoder`), and the one markup
/// escaper for the index page and the conformance reports.
package enum TextEscaping {
    /// Appends `text` as a JSON string literal to `output`, for the journal's hand-written JSON (on the server's
    /// hot path, see `JournalEntry`).
    public static func appendJSONQuoted(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: Array("\\u00".utf8))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0xF)])
            default:
                output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// `text` safe inside HTML or XML 1.0 text and attribute values.
    ///
    /// Control characters other than tab and newline are not allowed in XML 1.0, so they become `?`.
    public static func markup(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case _ where scalar.value < 0x20 && scalar != "\t" && scalar != "\n": result += "?"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
