import Foundation

extension TaskRecord {
    /// The record as one line of JSON (with its newline), byte for byte what `JSONEncoder` writes with
    /// `.sortedKeys`, `.withoutEscapingSlashes` and ISO 8601 dates: keys in order, `nil` fields left out.
    ///
    /// Written by hand because a line is appended for every small task: `JSONEncoder` (its container machinery
    /// and a dictionary per object) was about 5% of a 500-file run (a line before the first byte and one at completion). The log is read back with `JSONDecoder`, and a
    /// test compares the two encoders on records with every field set and none.
    var jsonLine: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(640)
        var first = true
        func key(_ name: StaticString) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            out.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: "\":".utf8)
        }
        func string(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            appendJSONString(value, to: &out)
        }
        func number(_ name: StaticString, _ value: Int64?) {
            guard let value else { return }
            key(name)
            out.append(contentsOf: String(value).utf8)
        }
        // Keys in sorted order, as `.sortedKeys` writes them.
        string("created", Self.iso8601(created))
        string("destination", destination)
        string("error", error)
        string("errorKind", errorKind)
        string("etag", etag)
        string("expectedSHA256", expectedSHA256)
        string("format", format)
        string("id", id.rawValue)
        string("lastModified", lastModified)
        key("overwrite")
        out.append(contentsOf: (overwrite ? "true" : "false").utf8)
        string("partial", partial)
        number("recordedLength", recordedLength)
        key("redirects")
        out.append(UInt8(ascii: "["))
        for (index, hop) in redirects.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: "{\"from\":".utf8)
            appendJSONString(hop.from, to: &out)
            out.append(contentsOf: ",\"status\":".utf8)
            out.append(contentsOf: String(hop.status).utf8)
            out.append(contentsOf: ",\"to\":".utf8)
            appendJSONString(hop.to, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        string("reprDigestSHA256", reprDigestSHA256)
        string("resolvedURL", resolvedURL)
        string("sha256", sha256)
        string("state", state.rawValue)
        number("totalLength", totalLength)
        string("updated", Self.iso8601(updated))
        string("url", url)
        number("version", Int64(version))
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// `yyyy-MM-ddTHH:mm:ssZ` in UTC, whole seconds, as `JSONEncoder`'s `.iso8601` strategy writes a date.
    static func iso8601(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(parts.tm_year + 1900, 4) + "-" + pad(parts.tm_mon + 1, 2) + "-" + pad(parts.tm_mday, 2) + "T"
            + pad(parts.tm_hour, 2) + ":" + pad(parts.tm_min, 2) + ":" + pad(parts.tm_sec, 2) + "Z"
    }
}

/// Appends `value` as a JSON string: quotes, backslashes and control characters escaped as `JSONEncoder` escapes
/// them, `/` and non-ASCII characters as they are.
private func appendJSONString(_ value: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in value.utf8 {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
        case 0x08: out.append(contentsOf: "\\b".utf8)
        case 0x0C: out.append(contentsOf: "\\f".utf8)
        case 0x0A: out.append(contentsOf: "\\n".utf8)
        case 0x0D: out.append(contentsOf: "\\r".utf8)
        case 0x09: out.append(contentsOf: "\\t".utf8)
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: "\\u00".utf8)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        default: out.append(byte)
        }
    }
    out.append(UInt8(ascii: "\""))
}
