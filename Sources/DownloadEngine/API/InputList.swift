import Foundation

/// A list of downloads in the form of aria2c's input files (`rangefetch -i FILE`): one URL per line, each followed
/// by indented option lines, `out=NAME` (the output's name) and `checksum=sha-256=HEX` (its expected SHA-256).
///
/// ```
/// # nightly images
/// https://example.com/images/a.iso
///   out=a-nightly.iso
///   checksum=sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// https://example.com/images/b.iso
/// ```
///
/// An option line starts with a space or a tab; blank lines and lines whose first non-blank character is `#` are
/// ignored; a `\r` before the line break is dropped. Anything else is an error naming `SOURCE:LINE`: a URL line
/// that is not one absolute `http` or `https` URL (aria2c's mirrors, several URLs on one line separated by tabs,
/// are not supported), an option before any URL, an option other than `out` and `checksum`, an option given twice
/// for one URL, a `checksum` other than `sha-256=` and 64 hex digits, and an `out` that is empty, absolute, has an
/// empty, `.` or `..` component or a control character, or is the `out` of an earlier URL. `out` is relative to
/// the output directory and may name a subdirectory.
public struct InputList: Sendable, Hashable {
    /// One URL of the list and its options.
    public struct Entry: Sendable, Hashable {
        /// The URL, as written.
        public var url: String
        /// `out=`: the output's path relative to the output directory, if given.
        public var output: String?
        /// `checksum=sha-256=`: the expected SHA-256 in lower-case hex, if given.
        public var sha256: String?
        /// The line the URL is on, from 1.
        public var line: Int

        /// Creates an entry.
        ///
        /// - Parameters:
        ///   - url: The URL.
        ///   - output: The output's relative path.
        ///   - sha256: The expected SHA-256 (lower-case hex).
        ///   - line: The URL's line.
        public init(url: String, output: String? = nil, sha256: String? = nil, line: Int) {
            self.url = url
            self.output = output
            self.sha256 = sha256
            self.line = line
        }
    }

    /// The URLs, in the order of the list.
    public var entries: [Entry]

    /// Reads a list.
    ///
    /// - Parameters:
    ///   - text: The list's text.
    ///   - source: What to call it in errors (the file name, or `-` for standard input).
    /// - Throws: ``DownloadError/invalidInputList(_:)`` naming `source:line` and what is wrong there.
    public init(parsing text: String, source: String) throws(DownloadError) {
        var entries: [Entry] = []
        var outputs: [String: Int] = [:]
        // "\r\n" is one Character: a split on "\n" alone would not see it.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            func bad(_ reason: String) -> DownloadError { .invalidInputList("\(source):\(number): \(reason)") }
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let content = line.trimmingCharacters(in: .whitespaces)
            if content.isEmpty || content.hasPrefix("#") { continue }
            guard let first = line.first, first == " " || first == "\t" else {
                guard !content.contains(where: \.isWhitespace) else {
                    throw bad("one URL per line (several URLs on a line, aria2c's mirrors, are not supported)")
                }
                guard Self.isHTTPURL(content) else { throw bad("'\(content)' is not an http or https URL") }
                entries.append(Entry(url: content, line: number))
                continue
            }
            guard var entry = entries.popLast() else { throw bad("'\(content)' comes before any URL") }
            guard let equals = content.firstIndex(of: "=") else {
                throw bad("'\(content)' is not an option (out=NAME or checksum=sha-256=HEX)")
            }
            let key = content[..<equals].trimmingCharacters(in: .whitespaces)
            let value = content[content.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "out":
                guard entry.output == nil else { throw bad("out= given twice for \(entry.url)") }
                if let problem = Self.problem(ofOutput: value) { throw bad("out=\(value): \(problem)") }
                if let earlier = outputs[value] { throw bad("out=\(value) is also the output of line \(earlier)") }
                outputs[value] = entry.line
                entry.output = value
            case "checksum":
                guard entry.sha256 == nil else { throw bad("checksum= given twice for \(entry.url)") }
                guard let digest = Self.sha256(value) else {
                    throw bad("checksum=\(value): expected sha-256= and 64 hex digits")
                }
                entry.sha256 = digest
            default:
                throw bad("unsupported option '\(key)' (out= and checksum= are)")
            }
            entries.append(entry)
        }
        self.entries = entries
    }

    /// The lower-case hex of `sha-256=HEX` (the algorithm's name case-insensitive), or `nil`.
    private static func sha256(_ value: String) -> String? {
        let parts = value.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "sha-256", parts[1].count == 64,
            parts[1].allSatisfy(\.isHexDigit)
        else { return nil }
        return parts[1].lowercased()
    }

    /// Why `output` cannot be an `out=` path, or `nil` when it can.
    private static func problem(ofOutput output: String) -> String? {
        if output.isEmpty { return "empty" }
        if output.hasPrefix("/") { return "must be relative to the output directory" }
        if output.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "has a control character"
        }
        let components = output.split(separator: "/", omittingEmptySubsequences: false)
        if components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            return "has an empty, '.' or '..' component"
        }
        return nil
    }

    /// Whether `text` is an absolute `http` or `https` URL with a host.
    private static func isHTTPURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}
