/// Lexical path helpers (no file system access), shared by the engine and `rangefetch`.
public enum LexicalPath {
    /// The directory part of `path` (`.` when it has none).
    public static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last component of `path`.
    public static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Makes `path` absolute against the current directory and removes `.`, `..` and empty components.
    public static func absolute(_ path: String, relativeTo base: String? = nil) -> String {
        // Most paths are already absolute and normal (the engine adds hundreds of them): returned as they are,
        // without the working directory, the split and the join.
        if isNormalAbsolute(path) { return path }
        // A state directory's relative paths (`<id>.part`, `../name`) against a normal base: joined directly.
        if let base, let joined = joinNormal(path, to: base) { return joined }
        let joined = path.hasPrefix("/") ? path : (base ?? FileIO.currentDirectory()) + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." { continue }
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Whether `path` starts with `/` and has no empty, `.` or `..` component (`/` alone is normal).
    private static func isNormalAbsolute(_ path: String) -> Bool {
        path == "/" || (path.utf8.first == UInt8(ascii: "/") && hasNormalComponents(path.utf8.dropFirst()))
    }

    /// Whether `utf8` is one or more components separated by `/`, none empty, `.` or `..`.
    private static func hasNormalComponents(_ utf8: Substring.UTF8View) -> Bool {
        // Length of the current component so far, and whether it has only dots.
        var length = 0
        var dotsOnly = true
        for byte in utf8 {
            if byte == UInt8(ascii: "/") {
                if length == 0 || (dotsOnly && length <= 2) { return false }
                length = 0
                dotsOnly = true
            } else {
                length += 1
                if byte != UInt8(ascii: ".") { dotsOnly = false }
            }
        }
        return !(length == 0 || (dotsOnly && length <= 2))
    }

    /// `base` joined with a relative `path` made of leading `../` and normal components, when `base` is normal;
    /// `nil` for any other input (left to the general case).
    private static func joinNormal(_ path: String, to base: String) -> String? {
        var rest = Substring(path)
        var ups = 0
        while rest.hasPrefix("../") {
            rest = rest.dropFirst(3)
            ups += 1
        }
        guard !rest.hasPrefix("/"), hasNormalComponents(rest.utf8), isNormalAbsolute(base) else { return nil }
        var head = base == "/" ? Substring("") : Substring(base)
        for _ in 0..<ups {
            guard let slash = head.lastIndex(of: "/") else { break }
            head = head[..<slash]
        }
        return head + "/" + rest
    }

    /// The relative path from directory `base` to `target`, both absolute and normalised.
    public static func relative(from base: String, to target: String) -> String {
        let b = base.split(separator: "/")
        let t = target.split(separator: "/")
        var common = 0
        while common < b.count, common < t.count, b[common] == t[common] { common += 1 }
        let ups = Array(repeating: "..", count: b.count - common)
        let rest = t[common...].map(String.init)
        let all = ups + rest
        return all.isEmpty ? "." : all.joined(separator: "/")
    }
}
