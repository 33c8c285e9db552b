import Foundation
import NIOConcurrencyHelpers
import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The verdicts `rangecheck serve` has given: every one appended to a JSON Lines file, so a restart loses none, and
/// in memory the latest of each report cell (a scenario row and a client column), with its picture.
///
/// A line is written (and flushed to the file) before the verdict is answered: a client that saw its verdict will
/// find it in the report after a restart. Memory is bounded: at most `limit` cells are held, and beyond it the one
/// judged longest ago leaves the live report (its verdicts stay in the file; a restart holds the newest cells again).
final class ResultStore: Sendable {
    /// One line of the file: the verdict, and the run's picture when there is one.
    struct Line: Codable, Sendable {
        var verdict: ConformanceAPI.Verdict
        /// What the run did, for its picture in the report.
        var trace: RunTrace?
    }

    /// A cell of the report: a scenario row and a column.
    struct Cell: Hashable, Sendable {
        var scenario: String
        var column: String

        init(scenario: String, column: String) {
            self.scenario = scenario
            self.column = column
        }

        init(_ verdict: ConformanceAPI.Verdict) {
            self.init(scenario: verdict.scenario, column: ResultStore.column(of: verdict))
        }
    }

    /// The report column of a verdict: the client label, with ` (https)` for an https run.
    static func column(client: String, scheme: String) -> String {
        scheme == "https" ? "\(client) (https)" : client
    }

    static func column(of verdict: ConformanceAPI.Verdict) -> String {
        column(client: verdict.client, scheme: verdict.scheme)
    }

    /// A held cell: its latest line, and when it was judged among all lines (for the order of columns and lines).
    private struct Held: Sendable {
        var line: Line
        var sequence: Int
    }

    /// A column's place: the sequence of its first verdict still counted, and how many of its cells are held.
    private struct ColumnPlace: Sendable {
        var first: Int
        var cells: Int
    }

    private struct State: Sendable {
        var cells: BoundedTable<Cell, Held>
        var columns: [String: ColumnPlace] = [:]
        var sequence = 0

        /// Holds `line` as its cell's latest.
        mutating func add(_ line: Line) {
            let cell = Cell(line.verdict)
            sequence += 1
            let sequence = sequence
            if cells.peekValue(forKey: cell, now: .now) == nil {
                let evicted = cells.count >= cells.retention.limit ? cells.oldestEntry?.key : nil
                cells.set(Held(line: line, sequence: sequence), forKey: cell, now: .now)
                if let evicted { forget(column: evicted.column) }
                columns[cell.column, default: ColumnPlace(first: sequence, cells: 0)].cells += 1
            } else {
                cells.set(Held(line: line, sequence: sequence), forKey: cell, now: .now)
            }
        }

        /// Counts the held cells of each column again, after cells were removed other than by the limit.
        mutating func recountColumns() {
            var counts: [String: Int] = [:]
            for (cell, _) in cells.entries { counts[cell.column, default: 0] += 1 }
            var places: [String: ColumnPlace] = [:]
            for (column, count) in counts {
                places[column] = ColumnPlace(first: columns[column]?.first ?? sequence, cells: count)
            }
            columns = places
        }

        /// One cell of `column` is no longer held.
        mutating func forget(column: String) {
            guard let place = columns[column] else { return }
            columns[column] = place.cells > 1 ? ColumnPlace(first: place.first, cells: place.cells - 1) : nil
        }
    }

    private let path: String?
    private let state: NIOLockedValueBox<State>

    /// Opens the store, reading the lines already in `path` one at a time.
    ///
    /// - Parameters:
    ///   - path: the JSON Lines file; nil keeps the verdicts in memory only.
    ///   - limit: the most report cells held in memory.
    ///   - visit: called with every line read, in order (the service learns its judged runs from them).
    /// - Throws: `ConformanceError.io` naming the file and line when it cannot be read or a line is not a verdict.
    init(path: String?, limit: Int, visit: (Line) -> Void = { _ in }) throws(ConformanceError) {
        self.path = path
        var state = State(cells: BoundedTable(Retention(limit: limit, idleExpiry: nil)))
        if let path, FileManager.default.fileExists(atPath: path) {
            let decoder = JSONDecoder()
            try LineReader.forEachLine(of: path) { number, text throws(ConformanceError) in
                let line: Line
                do {
                    line = try decoder.decode(Line.self, from: text)
                } catch {
                    throw .io("\(path):\(number): not a verdict line of rangecheck serve")
                }
                state.add(line)
                visit(line)
            }
        }
        self.state = NIOLockedValueBox(state)
    }

    /// The latest line of every held cell, in the order judged.
    var all: [Line] {
        state.withLockedValue { state in
            state.cells.entries.map(\.value).sorted { $0.sequence < $1.sequence }.map(\.line)
        }
    }

    /// The columns of the held cells, in the order of their first verdicts, and the held cells' lines.
    var report: (columns: [String], cells: [Cell: Line]) {
        state.withLockedValue { state in
            let columns = state.columns.sorted { $0.value.first < $1.value.first }.map(\.key)
            var cells: [Cell: Line] = [:]
            for (cell, held) in state.cells.entries { cells[cell] = held.line }
            return (columns, cells)
        }
    }

    /// How many cells are held.
    var heldCount: Int { state.withLockedValue { $0.cells.count } }

    /// Keeps a verdict: appends it to the file, then holds it as its cell's latest.
    ///
    /// - Throws: `ConformanceError.io` when the file cannot be written (the verdict is then not kept).
    func append(_ line: Line) throws(ConformanceError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(line) else { throw .io("cannot encode a verdict") }
        let failure: ConformanceError? = state.withLockedValue { state in
            if let path {
                do throws(ConformanceError) {
                    try Self.appendLine(encoded + Data([0x0A]), to: path)
                } catch {
                    return error
                }
            }
            state.add(line)
            return nil
        }
        if let failure { throw failure }
    }

    /// Removes every verdict `selects` picks, from the file (rewritten without them, then renamed over it) and from
    /// memory; a held cell whose latest verdict goes shows its previous verdict from the file, if it has one.
    ///
    /// - Parameters:
    ///   - selects: picks the verdicts to remove.
    /// - Returns: how many verdicts were removed (from the file, or from memory without one).
    /// - Throws: `ConformanceError.io` when the file cannot be read or rewritten (nothing is removed then).
    func remove(where selects: @escaping (ConformanceAPI.Verdict) -> Bool) throws(ConformanceError) -> Int {
        let outcome: Result<Int, ConformanceError> = state.withLockedValue { state in
            guard let path, FileManager.default.fileExists(atPath: path) else {
                let removed = state.cells.removeAll { _, held in selects(held.line.verdict) }
                if removed > 0 { state.recountColumns() }
                return .success(removed)
            }
            do throws(ConformanceError) {
                let rewrite = try Self.rewrite(path, without: selects)
                guard rewrite.removed > 0 else { return .success(0) }
                // The held cells whose latest verdict went: back to the latest kept one, or out of the report.
                let gone = state.cells.entries.filter { selects($0.value.line.verdict) }
                for (cell, held) in gone {
                    if let previous = rewrite.latestKept[cell] {
                        state.cells.set(Held(line: previous, sequence: held.sequence), forKey: cell, now: .now)
                    } else {
                        state.cells.removeValue(forKey: cell)
                    }
                }
                state.recountColumns()
                return .success(rewrite.removed)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// What a rewrite removed, and the latest line kept of every cell that had a line removed.
    private struct Rewrite {
        var removed = 0
        var latestKept: [Cell: Line] = [:]
    }

    /// Writes the file again without the selected verdicts: to a temporary file beside it, flushed to disk, then
    /// renamed over it, so a crash leaves the old file or the new one, never half of one.
    private static func rewrite(
        _ path: String, without selects: (ConformanceAPI.Verdict) -> Bool
    ) throws(ConformanceError) -> Rewrite {
        /// The verdict alone: the picture is copied as text, not decoded.
        struct Head: Decodable { var verdict: ConformanceAPI.Verdict }
        let temporary = path + ".rewrite-\(UInt32.random(in: 0...UInt32.max))"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
            let output = FileHandle(forWritingAtPath: temporary)
        else { throw .io("cannot create \(temporary) to rewrite the results file") }
        var rewrite = Rewrite()
        var kept: [Cell: Data] = [:]
        var removedCells: Set<Cell> = []
        let decoder = JSONDecoder()
        do throws(ConformanceError) {
            defer { try? output.close() }
            try LineReader.forEachLine(of: path) { number, text throws(ConformanceError) in
                guard let head = try? decoder.decode(Head.self, from: text) else {
                    throw .io("\(path):\(number): not a verdict line of rangecheck serve")
                }
                let cell = Cell(head.verdict)
                if selects(head.verdict) {
                    rewrite.removed += 1
                    removedCells.insert(cell)
                    return
                }
                kept[cell] = text
                do {
                    try output.write(contentsOf: text + Data([0x0A]))
                } catch {
                    throw ConformanceError.io("cannot write \(temporary): \(error.localizedDescription)")
                }
            }
            guard rewrite.removed > 0 else {
                try? FileManager.default.removeItem(atPath: temporary)
                return rewrite
            }
            do {
                try output.synchronize()
            } catch {
                throw ConformanceError.io("cannot flush \(temporary): \(error.localizedDescription)")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw .io("cannot replace the results file \(path): \(reason)")
        }
        for cell in removedCells {
            if let text = kept[cell], let line = try? decoder.decode(Line.self, from: text) {
                rewrite.latestKept[cell] = line
            }
        }
        return rewrite
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
