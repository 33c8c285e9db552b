/// Shell-style glob matching (`*`, `?`, `[abc]`) for `--scenario`.
package enum Glob {
    /// Whether `name` matches `pattern`; a comma separates alternatives (`plain,kill-*`).
    ///
    /// - Parameters:
    ///   - pattern: the glob.
    ///   - name: the candidate.
    /// - Returns: true on a match.
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        pattern.split(separator: ",").contains { match(Array($0), Array(name)) }
    }

    private static func match(_ pattern: [Character], _ name: [Character]) -> Bool {
        var p = 0
        var n = 0
        var star: Int?
        var resume = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = n
                p += 1
            } else if p < pattern.count, let (matched, next) = single(pattern, p, name[n]), matched {
                p = next
                n += 1
            } else if let star {
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// Matches one character against the pattern element at `p`: `?`, a bracket class, or a literal.
    private static func single(_ pattern: [Character], _ p: Int, _ character: Character) -> (Bool, Int)? {
        switch pattern[p] {
        case "?": return (true, p + 1)
        case "[":
            guard let close = pattern[(p + 1)...].firstIndex(of: "]") else { return (character == "[", p + 1) }
            return (pattern[(p + 1)..<close].contains(character), close + 1)
        default: return (pattern[p] == character, p + 1)
        }
    }
}
