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
            appendDecimal(value, to: &out)
        }
        func date(_ name: StaticString, _ value: Date) {
            key(name)
            out.append(UInt8(ascii: "\""))
            appendISO8601(value, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        // Keys in sorted order, as `.sortedKeys` writes them.
        date("created", created)
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
            appendDecimal(Int64(hop.status), to: &out)
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
        date("updated", updated)
        string("url", url)
        number("version", Int64(version))
        out.append(contentsOf: "}\n".utf8)
        return out
    }

}

/// Appends `value` in decimal, without the `String` that `String(value)` would allocate.
private func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    if value < 0 { out.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    var count = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
        repeat {
            buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            count += 1
        } while magnitude > 0
        out.append(contentsOf: buffer[(24 - count)...])
    }
}

/// Appends `yyyy-MM-ddTHH:mm:ssZ` in UTC, whole seconds, as `JSONEncoder`'s `.iso8601` strategy writes a date.
private func appendISO8601(_ date: Date, to out: inout [UInt8]) {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) {
        out.append(UInt8(ascii: "0") + UInt8(value / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
    let year = parts.tm_year + 1900
    two(year / 100)
    two(year % 100)
    out.append(UInt8(ascii: "-"))
    two(parts.tm_mon + 1)
    out.append(UInt8(ascii: "-"))
    two(parts.tm_mday)
    out.append(UInt8(ascii: "T"))
    two(parts.tm_hour)
    out.append(UInt8(ascii: ":"))
    two(parts.tm_min)
    out.append(UInt8(ascii: ":"))
    two(parts.tm_sec)
    out.append(UInt8(ascii: "Z"))
}

/// Appends `value` as a JSON string: quotes, backslashes and control characters escaped as `JSONEncoder` escapes
/// them, `/` and non-ASCII characters as they are. Also `rangefetch --json`'s string encoder.
package func appendJSONString(_ value: String, to out: inout [UInt8]) {
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
