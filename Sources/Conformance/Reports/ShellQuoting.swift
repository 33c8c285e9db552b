/// Words for a POSIX shell: the reproducer's command lines are pasted into one.
enum ShellQuoting {
    /// Characters a word may hold unquoted: none of them means anything to `sh`.
    private static let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,")

    /// `word` as it stands when every character is safe, else in single quotes (a `'` inside written `'\''`).
    ///
    /// - Parameters:
    ///   - word: one argument.
    /// - Returns: the word, ready for a shell line.
    static func quoted(_ word: String) -> String {
        if !word.isEmpty && word.allSatisfy({ safe.contains($0) }) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// The words quoted and joined with spaces.
    ///
    /// - Parameters:
    ///   - words: the program and its arguments.
    /// - Returns: the line.
    static func line(_ words: [String]) -> String { words.map(quoted).joined(separator: " ") }
}
