import DownloadEngine
import Foundation

extension RangeFetch {
    /// The `-i` list, read from its file or standard input, or `nil` without `-i`.
    ///
    /// - Throws: ``DownloadError/invalidInputList(_:)`` for a file that cannot be read or a line that cannot be
    ///   parsed, naming `FILE:LINE`.
    func inputList() throws(DownloadError) -> InputList? {
        guard let inputFile else { return nil }
        let text: String?
        if inputFile == "-" {
            text = StandardInput.text
        } else {
            text = try? String(contentsOfFile: inputFile, encoding: .utf8)
        }
        guard let text else { throw .invalidInputList("-i: cannot read '\(inputFile)'") }
        return try InputList(parsing: text, source: inputFile == "-" ? "<stdin>" : inputFile)
    }

    /// Every URL to download: the arguments, then the `-i` list's.
    func allURLs(_ list: InputList?) -> [String] { urls + (list?.entries.map(\.url) ?? []) }

    /// Checks that no URL of the `-i` list gets two different digests: its `checksum=` and `--sha256` or the
    /// `--checksums` line of its name (its `out=` name, else its URL's).
    ///
    /// - Returns: A one-line message naming the first URL whose digests disagree, or `nil`.
    func digestConflict(_ list: InputList?, checksums: [String: String]) -> String? {
        guard let list, let source = inputFile.map({ $0 == "-" ? "<stdin>" : $0 }) else { return nil }
        for entry in list.entries {
            guard let given = entry.sha256 else { continue }
            if let sha256, sha256.lowercased() != given {
                return
                    "\(entry.url): checksum= in \(source):\(entry.line) (\(given)) disagrees with --sha256 (\(sha256))"
            }
            let names = [entry.output.map(LexicalPath.lastComponent), OutputName.fromURL(entry.url)].compactMap { $0 }
            for name in names {
                if let listed = checksums[name], listed != given {
                    return "\(entry.url): checksum= in \(source):\(entry.line) (\(given)) disagrees with --checksums "
                        + "(\(listed) for \(name))"
                }
            }
        }
        return nil
    }
}

/// Standard input, read once: `validate()` runs again once the URLs set aside are back, and a second read would find
/// nothing.
enum StandardInput {
    static let text: String? = String(validating: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
}
