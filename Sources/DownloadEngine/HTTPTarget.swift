import HTTPVocabulary

/// The parts of an `http://` or `https://` URL a request needs, parsed without Foundation's `URL` (which costs more
/// than the rest of building a request).
struct HTTPTarget: Hashable, Sendable {
    /// Whether the scheme is `https`.
    var isSecure: Bool
    /// The host without brackets (an IPv6 literal is bare).
    var host: String
    var port: Int
    /// The `Host` field: the host as written (brackets kept) and the port unless it is the scheme's default.
    var hostField: String
    /// Path and query, `/` when the URL has no path; the fragment is not sent.
    var requestTarget: String

    /// The pool's key: connections are shared per scheme, host and port.
    var poolKey: String { (isSecure ? "https://" : "http://") + hostField }

    /// Whether the host is an IP address literal (which TLS does not send as SNI).
    var hostIsAddress: Bool {
        host.contains(":") || host.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: ".") }
    }

    /// Parses `http[s]://[user@]host[:port][/path][?query][#fragment]`; `nil` for anything else.
    init?(_ url: String) {
        let bytes = Array(url.utf8)
        let plain = Array("http://".utf8)
        let secure = Array("https://".utf8)
        let schemeLength: Int
        if bytes.count > plain.count, asciiCaseInsensitiveEqual(bytes[0..<plain.count], plain) {
            schemeLength = plain.count
            isSecure = false
        } else if bytes.count > secure.count, asciiCaseInsensitiveEqual(bytes[0..<secure.count], secure) {
            schemeLength = secure.count
            isSecure = true
        } else {
            return nil
        }
        var index = schemeLength
        let authorityStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"),
            bytes[index] != UInt8(ascii: "#")
        {
            index += 1
        }
        var authority = bytes[authorityStart..<index]
        // User information is not sent (the engine has no credentials of its own to put in it).
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[(authority.startIndex + 1)..<close]
            let rest = authority[(close + 1)...]
            if let colon = rest.first {
                guard colon == UInt8(ascii: ":") else { return nil }
                portBytes = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[authority.startIndex..<colon]
            portBytes = authority[(colon + 1)...]
        } else {
            hostBytes = authority
        }
        guard !hostBytes.isEmpty, portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        let defaultPort = isSecure ? 443 : 80
        let port = portBytes.isEmpty ? defaultPort : portBytes.reduce(0) { $0 * 10 + Int($1 - 48) }
        guard (1...65535).contains(port) else { return nil }
        host = String(decoding: hostBytes, as: UTF8.self)
        self.port = port
        let bracketed = host.contains(":") ? "[\(host)]" : host
        hostField = port == defaultPort ? bracketed : "\(bracketed):\(port)"
        var end = index
        while end < bytes.count, bytes[end] != UInt8(ascii: "#") { end += 1 }
        let path = bytes[index..<end]
        requestTarget = Self.encodedTarget(path.first == UInt8(ascii: "/") ? path : [UInt8(ascii: "/")] + path)
    }

    /// The path and query as they may go on the request line: a byte RFC 3986 does not allow there (a space, a
    /// control, a non-ASCII byte, `"<>\^`{|}`) is percent-encoded, as Foundation's `URL(string:)` does when it
    /// accepts such a URL; existing `%XX` escapes and every other byte stay as they are.
    static func encodedTarget(_ bytes: some Collection<UInt8>) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case 0...0x20, 0x7F...0xFF, UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"),
                UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"),
                UInt8(ascii: "}"):
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default:
                encoded.append(byte)
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
