import HTTPTypes
import HTTPVocabulary

/// One request header field as the engine stores it: in a ``DownloadRequest`` (so the request stays `Hashable`) and
/// in a task record.
struct HeaderField: Codable, Hashable, Sendable {
    var name: String
    var value: String
}

/// The user's request headers: which may be set, how a request's and the configuration's are combined, which are
/// sent after a redirect, and which reach the state directory. Pure functions over plain values.
enum RequestHeaders {
    /// Fields the engine writes itself (lower case): the range and its validator, the identity encoding the resume
    /// rules rely on, the digest request, the framing and the connection. A user's value would change which bytes
    /// come back (`If-None-Match` turns a download into a 304) or break the framing, so setting one is refused.
    static let owned: Set<String> = [
        "range", "if-range", "accept-encoding", "host", "want-repr-digest", "content-length", "transfer-encoding",
        "connection", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "te", "upgrade",
    ]

    /// Fields that carry credentials (lower case): written to a task record only when the request opts in
    /// (``DownloadRequest/storesCredentials``), and dropped after a cross-origin redirect by the default
    /// ``DownloadConfiguration/RedirectPolicy/sensitiveHeaders``.
    static let secrets: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The fields sent with a request besides the engine's own: the configuration's, except those the request sets
    /// too (the request wins by name, compared case-insensitively), then the request's; after a redirect that
    /// changed origin (`crossOrigin`), without the `sensitive` ones (lower-case names).
    static func user(
        configuration: [(name: String, value: String)], request: [(name: String, value: String)],
        sensitive: Set<String>, crossOrigin: Bool
    ) -> [(name: String, value: String)] {
        let requestNames = Set(request.map { $0.name.lowercased() })
        let merged = configuration.filter { !requestNames.contains($0.name.lowercased()) } + request
        guard crossOrigin else { return merged }
        return merged.filter { !sensitive.contains($0.name.lowercased()) }
    }

    /// Checks that each field may be sent as it is.
    ///
    /// - Throws: ``DownloadError/invalidHeader(_:)`` naming the first field whose name is not an HTTP token, whose
    ///   value holds a line break or a NUL, or which the engine sets itself (``owned``).
    static func validate(_ headers: [(name: String, value: String)]) throws {
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenCharacter) else {
                throw DownloadError.invalidHeader("invalid header name '\(printable(name))'")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw DownloadError.invalidHeader("header '\(name)' has a line break or NUL in its value")
            }
            guard !owned.contains(name.lowercased()) else {
                throw DownloadError.invalidHeader("header '\(name)' is set by the engine and cannot be given")
            }
        }
    }

    /// Parses `Name: value` as `curl -H` takes it: the name up to the first colon, the value with surrounding
    /// spaces and tabs removed; then ``validate(_:)``.
    ///
    /// - Throws: ``DownloadError/invalidHeader(_:)`` naming the line or the field.
    static func parse(_ line: String) throws -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: ":") else {
            throw DownloadError.invalidHeader("'\(printable(line))' is not 'Name: value' (no colon)")
        }
        let name = String(line[..<colon])
        let value = String(line[line.index(after: colon)...]).trimmingOWS()
        try validate([(name, value)])
        return (name, value)
    }

    /// `stored` with `given` applied on top: a field of `given` replaces the stored ones of its name. How a task
    /// re-added from the state directory combines the headers its record kept with the ones given again.
    static func replacing(
        _ stored: [(name: String, value: String)], with given: [(name: String, value: String)]
    ) -> [(name: String, value: String)] {
        let givenNames = Set(given.map { $0.name.lowercased() })
        return stored.filter { !givenNames.contains($0.name.lowercased()) } + given
    }

    /// The fields a record may write to disk, and the names of the secrets missing from it (in order, once
    /// each): those it leaves out, and those `withheld` before and still not given (a task loaded from the state
    /// directory and saved again before it was re-added).
    static func forDisk(
        _ headers: [(name: String, value: String)], storesCredentials: Bool, withheld before: [String]
    ) -> (kept: [(name: String, value: String)], withheld: [String]) {
        var withheld = missing(before, in: headers)
        guard !storesCredentials else { return (headers, withheld) }
        for (name, _) in headers where secrets.contains(name.lowercased()) {
            if !withheld.contains(where: { $0.lowercased() == name.lowercased() }) { withheld.append(name) }
        }
        return (headers.filter { !secrets.contains($0.name.lowercased()) }, withheld)
    }

    /// The names in `withheld` that `headers` does not carry (case-insensitively): the secrets a resumed task
    /// still needs.
    static func missing(_ withheld: [String], in headers: [(name: String, value: String)]) -> [String] {
        let present = Set(headers.map { $0.name.lowercased() })
        return withheld.filter { !present.contains($0.lowercased()) }
    }

    /// `text` with control characters shown as `\u{..}`, so an error message stays one line.
    private static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            out += scalar.value < 0x20 || scalar.value == 0x7F ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out
    }
}

extension TaskRecord {
    /// The request's own headers as the engine sends them.
    var requestHeaders: [(name: String, value: String)] {
        get { (headers ?? []).map { ($0.name, $0.value) } }
        set { headers = newValue.isEmpty ? nil : newValue.map { HeaderField(name: $0.name, value: $0.value) } }
    }

    /// The record as it is written to disk: without the credential headers unless the request opted in, their
    /// names kept in ``withheldHeaders``.
    var forDisk: TaskRecord {
        var record = self
        let (kept, withheld) = RequestHeaders.forDisk(
            requestHeaders, storesCredentials: storesCredentials == true, withheld: withheldHeaders ?? [])
        record.requestHeaders = kept
        record.withheldHeaders = withheld.isEmpty ? nil : withheld
        return record
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate func trimmingOWS() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }), let last = lastIndex(where: { !isOWS($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

extension DownloadRequest {
    /// Parses a header given as `Name: value` (as `curl -H` takes it) and checks it may be sent.
    ///
    /// - Parameter line: The header line, without a line break.
    /// - Returns: The field, its name as given and its value without surrounding spaces.
    /// - Throws: ``DownloadError/invalidHeader(_:)`` naming the culprit: no colon, a name that is not an HTTP token,
    ///   a line break in the value, or a header the engine sets itself (`Range`, `If-Range`, `Accept-Encoding`,
    ///   `Host`, ...).
    public static func header(parsing line: String) throws -> HTTPField {
        let (name, value) = try RequestHeaders.parse(line)
        // The parse checked the name is a token, which is what HTTPField.Name requires.
        guard let fieldName = HTTPField.Name(name) else {
            throw DownloadError.invalidHeader("invalid header name '\(name)'")
        }
        return HTTPField(name: fieldName, value: value)
    }
}
