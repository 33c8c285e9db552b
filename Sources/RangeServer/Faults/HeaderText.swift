import HTTPVocabulary

/// The values of the fault keys that carry header text (`content-range=RAW`, `content-type=VALUE`,
/// `content-disposition=VALUE`, `reject-header=NAME`): what they accept, and how they print so that the journal's
/// names parse back.
enum HeaderText {
    /// The longest value accepted, in UTF-8 bytes: room for any real Content-Disposition, short enough for a log line.
    static let maximumLength = 256

    /// The end of the one-line error for a bad value (`key=value: expected <this>`).
    static let valueExpected =
        "a header value of 1 to 256 bytes without control characters (CR, LF, tab ...) or spaces at either end"

    /// The end of the one-line error for a bad field name.
    static let nameExpected = "a header field name: 1 to 64 letters, digits or !#$%&'*+-.^_`|~"

    /// `text` when it can go out as a field value as it is: 1 to `maximumLength` bytes, no control character (C0, DEL
    /// or C1: a CR or LF would start a header of the client's choosing, a tab or NUL no client reads alike), no space
    /// at either end (a client would trim it, so what was sent and what was read would differ).
    ///
    /// - Parameters:
    ///   - text: the decoded value, from a query (percent-decoded already) or a scenario step (as written).
    /// - Returns: the value, or nil when it cannot be sent.
    static func value(_ text: String) -> String? {
        guard (1...maximumLength).contains(text.utf8.count), text.first != " ", text.last != " " else { return nil }
        let clean = text.unicodeScalars.allSatisfy { scalar in
            scalar.value >= 0x20 && !(0x7F...0x9F).contains(scalar.value)
        }
        return clean ? text : nil
    }

    /// `text` lower-cased when it is a field name (an RFC 9110 token of at most 64 characters); nil otherwise.
    static func name(_ text: String) -> String? {
        guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy(isTokenCharacter) else { return nil }
        return text.lowercased()
    }

    /// `text` as a query value: percent-encoded wherever a URL query could not carry the byte as it is or
    /// `QueryString` would read it otherwise (`%`, `&`, `+`, `#`, a space, `"`, non-ASCII ...), so that the journal's
    /// `key=value` names joined with `&` parse back to the same plan and can be pasted into a URL.
    ///
    /// - Parameters:
    ///   - text: a value `value(_:)` or `name(_:)` accepted.
    /// - Returns: the encoded text; letters, digits and `-._~!$'()*,;=:@/?` stay as they are.
    static func queryForm(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isQuerySafe(byte) {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                output += "%"
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return output
    }

    /// Whether a byte stays as it is in `queryForm`: RFC 3986's unreserved characters, its sub-delimiters but `&`
    /// and `+`, and `:@/?`.
    private static func isQuerySafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default: "-._~!$'()*,;=:@/?".utf8.contains(byte)
        }
    }
}
