import Foundation
import NIOConcurrencyHelpers

/// The verdicts `rangecheck serve` has given, in memory and appended to a JSON Lines file, so a restart loses none.
///
/// A line is written (and flushed to the file) before the verdict is answered: a client that saw its verdict will
/// find it in the report after a restart.
final class ResultStore: Sendable {
    /// One line of the file: the verdict, and the run's picture when there is one.
    struct Line: Codable, Sendable {
        var verdict: ConformanceAPI.Verdict
        /// What the run did, for its picture in the report.
        var trace: RunTrace?
    }

    private let path: String?
    private let lines: NIOLockedValueBox<[Line]>

    /// Opens the store, reading the lines already in `path`.
    ///
    /// - Parameters:
    ///   - path: the JSON Lines file; nil keeps the verdicts in memory only.
    /// - Throws: `ConformanceError.io` naming the file and line when it cannot be read or a line is not a verdict.
    init(path: String?) throws(ConformanceError) {
        self.path = path
        var loaded: [Line] = []
        if let path, FileManager.default.fileExists(atPath: path) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .io("cannot read the results file \(path)")
            }
            let decoder = JSONDecoder()
            for (number, text) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
                .enumerated() where !text.isEmpty
            {
                do {
                    loaded.append(try decoder.decode(Line.self, from: Data(text)))
                } catch {
                    throw .io("\(path):\(number + 1): not a verdict line of rangecheck serve")
                }
            }
        }
        lines = NIOLockedValueBox(loaded)
    }

    /// Every line, in the order judged.
    var all: [Line] { lines.withLockedValue { $0 } }

    /// Whether a run has a verdict.
    func contains(run: String) -> Bool { lines.withLockedValue { $0.contains { $0.verdict.run == run } } }

    /// Keeps a verdict: appends it to the file, then to memory.
    ///
    /// - Throws: `ConformanceError.io` when the file cannot be written (the verdict is then not kept).
    func append(_ line: Line) throws(ConformanceError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(line) else { throw .io("cannot encode a verdict") }
        let failure: ConformanceError? = lines.withLockedValue { lines in
            if let path {
                do throws(ConformanceError) {
                    try Self.appendLine(encoded + Data([0x0A]), to: path)
                } catch {
                    return error
                }
            }
            lines.append(line)
            return nil
        }
        if let failure { throw failure }
    }

    private static func appendLine(_ data: Data, to path: String) throws(ConformanceError) {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw .io("cannot create the results file \(path)")
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: data)
        } catch {
            throw .io("cannot write the results file \(path): \(error.localizedDescription)")
        }
    }
}
