import Foundation

/// Reads a file line by line, a megabyte at a time, so a results file of any length is read in bounded memory.
enum LineReader {
    /// The bytes read at once.
    static let chunkSize = 1 << 20

    /// Calls `body` with each non-empty line (without its newline) and its 1-based line number.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - body: called per line; an error it throws ends the reading and is rethrown.
    /// - Throws: `ConformanceError.io` when the file cannot be read, or what `body` threw.
    static func forEachLine(
        of path: String, _ body: (Int, Data) throws(ConformanceError) -> Void
    ) throws(ConformanceError) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .io("cannot read the results file \(path)") }
        defer { try? handle.close() }
        var pending = Data()
        var number = 0
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: chunkSize) ?? Data()
            } catch {
                throw .io("cannot read the results file \(path): \(error.localizedDescription)")
            }
            if chunk.isEmpty { break }
            pending.append(chunk)
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: 0x0A) {
                number += 1
                if newline > start { try body(number, Data(pending[start..<newline])) }
                start = pending.index(after: newline)
            }
            pending = Data(pending[start...])
        }
        if !pending.isEmpty { try body(number + 1, pending) }
    }
}
