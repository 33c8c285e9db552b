import Foundation

extension TaskRecord {
    /// Writes the task log's lines: compact, keys sorted, slashes as they are, ISO 8601 dates (whole seconds, UTC).
    private static let lineEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// The record as one line of the task log, newline included; `StateStore.decode` reads it back.
    func jsonLine() throws -> [UInt8] {
        var line = Array(try Self.lineEncoder.encode(self))
        line.append(0x0A)
        return line
    }
}
