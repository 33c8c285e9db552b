#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A segmented task's live progress, `<id>.segments` beside its record: one fixed-width line per segment begun in
/// this run, `START POSITION`, rewritten in place after every write buffer.
///
/// The record holds the ranges done when it was last saved, but saving it (a new file and a rename) after every
/// write buffer of every connection would cost more than the write. A slot line is one `pwrite` of 42 bytes into a
/// page the kernel already holds, and like the body bytes it outlives a `kill -9` in the page cache. So a killed run
/// loses at most the write buffer each connection had in hand: the next run takes the union of the record's ranges
/// and every slot's `START..<POSITION`.
///
/// A slot is written only after the bytes it covers, and a segment gets a new slot (the file only grows in a run),
/// so a line never claims bytes that are not on disk. The record, with the validators these bytes belong to, is
/// saved before the log is started; a restart from zero removes the log before the partial file is emptied.
final class SegmentLog: @unchecked Sendable {
    static let header = Array("rangefetch-segments 1\n".utf8)
    /// Two 20-digit numbers, a space and a newline.
    static let lineLength = 42

    private let fd: Int32
    let path: String

    /// Starts an empty log at `path` (replacing any earlier one: its slots must already be in the record).
    init(path: String) throws {
        self.path = path
        fd = try FileIO.open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC)
        // No close here when the header cannot be written: every stored property is set, so a throw runs `deinit`,
        // which closes the descriptor. A second close would close whatever file or socket had been given the number
        // in between, on any thread.
        try Self.header.withUnsafeBytes { try FileIO.writeAll(fd, path, $0, at: 0) }
    }

    deinit { FileIO.close(fd) }

    /// Records that `start..<position` of segment slot `slot` is on disk.
    func write(slot: Int, start: Int64, position: Int64) throws {
        var line = [UInt8](repeating: UInt8(ascii: "0"), count: Self.lineLength)
        Self.digits(start, into: &line, at: 0)
        line[20] = UInt8(ascii: " ")
        Self.digits(position, into: &line, at: 21)
        line[41] = UInt8(ascii: "\n")
        let offset = Int64(Self.header.count + slot * Self.lineLength)
        try line.withUnsafeBytes { try FileIO.writeAll(fd, path, $0, at: offset) }
    }

    private static func digits(_ value: Int64, into line: inout [UInt8], at index: Int) {
        var value = max(0, value)
        var cursor = index + 19
        while value > 0, cursor >= index {
            line[cursor] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
            cursor -= 1
        }
    }

    /// The ranges a log at `path` says are on disk; none when there is no log or it is not one. A line cut short or
    /// never written (zeros from a hole) is skipped.
    static func ranges(at path: String) -> [Range<Int64>] {
        guard let fd = try? FileIO.open(path, O_RDONLY | O_CLOEXEC) else { return [] }
        defer { FileIO.close(fd) }
        guard let size = try? FileIO.size(fd, path), size >= header.count, size < 64 << 20 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let read = bytes.withUnsafeMutableBytes { (try? FileIO.read(fd, path, into: $0, at: 0)) ?? 0 }
        guard read == bytes.count, Array(bytes[0..<header.count]) == header else { return [] }
        var ranges: [Range<Int64>] = []
        var offset = header.count
        while offset + lineLength <= bytes.count {
            let line = bytes[offset..<offset + lineLength]
            offset += lineLength
            guard line[line.startIndex + 20] == UInt8(ascii: " "), line.last == UInt8(ascii: "\n"),
                let start = number(line.prefix(20)), let position = number(line.dropFirst(21).prefix(20)),
                start < position
            else { continue }
            ranges.append(start..<position)
        }
        return ranges
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
