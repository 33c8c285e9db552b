import Foundation

/// The name of a file the server names (``DownloadRequest/namesFromResponse``): one file name inside the output
/// directory, never a path.
///
/// The rule, applied to the `Content-Disposition` name (``ContentDisposition/filename(_:)``) and, when that leaves
/// nothing, to the last segment of the URL's path:
/// 1. Only what follows the last `/` or `\` is kept: a name never chooses a directory (`../../etc/passwd` is
///    `passwd`).
/// 2. Control characters (U+0000-U+001F, U+007F-U+009F) become `_`: a name must print as one line.
/// 3. Spaces at either end and leading dots are removed: no hidden file (the state directory `.rangefetch` sits
///    beside the outputs), and `.` and `..` are left with nothing.
/// 4. A name longer than 255 UTF-8 bytes (the usual `NAME_MAX`) is cut at a character boundary before its
///    extension, which is kept when it is at most 32 bytes.
/// 5. Nothing left: the name is unusable. With neither name usable the file is `download`.
public enum OutputName {
    /// The longest name kept, in UTF-8 bytes.
    static let maximumLength = 255

    /// The name a download is saved under: the sanitised `Content-Disposition` name, else the sanitised last
    /// segment of `url`'s path, else `download`.
    ///
    /// - Parameters:
    ///   - contentDisposition: The response's `Content-Disposition`, if any.
    ///   - url: The URL the download was asked for.
    /// - Returns: One file name: no `/`, not empty, not starting with a dot.
    public static func choose(contentDisposition: String?, url: String) -> String {
        if let given = contentDisposition.flatMap(ContentDisposition.filename), let name = sanitised(given) {
            return name
        }
        return fromURL(url) ?? "download"
    }

    /// The sanitised last segment of `url`'s (percent-decoded) path, or `nil` when it leaves nothing.
    ///
    /// - Parameter url: The URL.
    /// - Returns: The name, or `nil`.
    public static func fromURL(_ url: String) -> String? {
        let path = URLComponents(string: url)?.path ?? ""
        return sanitised(LexicalPath.lastComponent(path))
    }

    /// One file name made of `name` by the rule above, or `nil` when nothing usable is left.
    ///
    /// - Parameter name: A name as a server or URL gave it.
    /// - Returns: The name, or `nil`.
    public static func sanitised(_ name: String) -> String? {
        var scalars = Substring(name).unicodeScalars[...]
        if let separator = scalars.lastIndex(where: { $0 == "/" || $0 == "\\" }) {
            scalars = scalars[scalars.index(after: separator)...]
        }
        var cleaned = String.UnicodeScalarView()
        for scalar in scalars {
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            cleaned.append(isControl ? "_" : scalar)
        }
        var text = String(cleaned).trimmingCharacters(in: .whitespaces)
        while text.hasPrefix(".") {
            text.removeFirst()
            text = text.trimmingCharacters(in: .whitespaces)
        }
        if text.utf8.count > maximumLength { text = shortened(text) }
        return text.isEmpty ? nil : text
    }

    /// `text` cut to ``maximumLength`` bytes at a character boundary, keeping an extension of at most 32 bytes.
    private static func shortened(_ text: String) -> String {
        var stem = Substring(text)
        var suffix = Substring()
        if let dot = text.lastIndex(of: "."), dot != text.startIndex, text[dot...].utf8.count <= 32 {
            stem = text[..<dot]
            suffix = text[dot...]
        }
        let room = maximumLength - suffix.utf8.count
        var kept = Substring()
        for character in stem {
            if kept.utf8.count + String(character).utf8.count > room { break }
            kept.append(character)
        }
        return String(kept + suffix)
    }
}
