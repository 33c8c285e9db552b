import Foundation
import TestSupport
import Testing

@testable import DownloadEngine

/// A fresh temporary directory per test, removed with its test process's (``makeTestDirectory(prefix:label:)``).
func makeTemporaryDirectory(_ name: String = #function) -> String {
    makeTestDirectory(prefix: "engine-tests", label: name.filter { $0.isLetter || $0.isNumber })
}

@Suite("State store")
struct StateStoreTests {
    func record(_ store: StateStore, destination: String) -> TaskRecord {
        let id = DownloadTaskID.random()
        return TaskRecord(
            id: id, url: "http://127.0.0.1:1/bytes/1K", destination: store.relative(destination),
            partial: id.rawValue + ".part", state: .paused, created: Date(), updated: Date())
    }

    @Test func roundTripsWithRelativePathsAndSurvivesAMove() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root + "/out/.rangefetch")
        var r = record(store, destination: root + "/out/file.bin")
        r.etag = "\"x\""
        r.totalLength = 1024
        try store.save(r)
        let json = try String(contentsOfFile: store.recordPath(r.id), encoding: .utf8)
        #expect(json.contains("\"format\" : \"rangefetch-task\""))
        #expect(json.contains("\"version\" : 1"))
        #expect(json.contains("\"destination\" : \"../file.bin\""))
        #expect(!json.contains(root))
        #expect(!FileManager.default.fileExists(atPath: store.recordPath(r.id) + ".tmp"))

        try FileManager.default.moveItem(atPath: root + "/out", toPath: root + "/moved")
        let moved = try StateStore(directory: root + "/moved/.rangefetch")
        let loaded = moved.loadAll()
        #expect(loaded.problems.isEmpty)
        #expect(loaded.records.map(\.id) == [r.id])
        #expect(moved.destinationPath(loaded.records[0]) == root + "/moved/file.bin")
        #expect(loaded.records[0].etag == "\"x\"")
    }

    @Test func taskLogKeepsTheLastLinePerDownloadAndYieldsToRecordFiles() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        var first = record(store, destination: root + "/a")
        first.state = .completed
        var again = first
        again.id = DownloadTaskID.random()
        again.recordedLength = 7
        var other = record(store, destination: root + "/b")
        other.state = .completed
        var filed = record(store, destination: root + "/c")
        filed.state = .completed
        for entry in [first, again, other, filed] { try store.appendToLog(entry) }
        try store.save(filed)  // a record file is newer than any log line of its task
        let log = URL(fileURLWithPath: store.taskLogPath)
        let handle = try FileHandle(forWritingTo: log)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("{ cut short by a power lo".utf8))
        try handle.close()

        let loaded = store.loadAll()
        #expect(loaded.records.map(\.id) == [filed.id])
        #expect(loaded.logged.map(\.id) == [again.id, other.id])
        #expect(loaded.logged.first?.recordedLength == 7)
        #expect(loaded.problems.count == 1, "the unreadable line is reported: \(loaded.problems)")
        // Rewritten with only what was kept, so the next load has nothing to drop or report.
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let reloaded = store.loadAll()
        #expect(reloaded.logged.map(\.id) == [again.id, other.id])
        #expect(reloaded.problems.isEmpty)

        store.removeFromLog(again.id)
        #expect(store.loadAll().logged.map(\.id) == [other.id])
    }

    @Test func unfinishedTaskInTheLogKeepsItsPartialFileAndLaterLinesWin() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        // Logged before its first byte was written, then killed: its partial file is claimed, not an orphan.
        var resumable = record(store, destination: root + "/a")
        resumable.state = .running
        resumable.etag = "\"v1\""
        resumable.totalLength = 4096
        try store.appendToLog(resumable)
        // Logged, but its partial file is gone: nothing to resume, so the line is dropped.
        var vanished = record(store, destination: root + "/b")
        vanished.state = .running
        try store.appendToLog(vanished)
        // Logged running, then completed: the later line wins and its partial (renamed away) is not needed.
        var finished = record(store, destination: root + "/c")
        finished.state = .running
        try store.appendToLog(finished)
        finished.state = .completed
        try store.appendToLog(finished)
        let orphan = "\(DownloadTaskID.random()).part"
        for name in [resumable.partial, orphan] {
            try Data(repeating: 7, count: 100).write(to: URL(fileURLWithPath: root + "/" + name))
        }

        let loaded = store.loadAll()
        #expect(loaded.problems.isEmpty)
        #expect(loaded.records.isEmpty)
        #expect(loaded.logged.map(\.id) == [resumable.id, finished.id])
        #expect(loaded.logged.first?.etag == "\"v1\"")
        #expect(loaded.logged.last?.state == .completed)
        let partials = Set(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasSuffix(".part") })
        #expect(partials == [resumable.partial])
        let lines = try String(contentsOfFile: store.taskLogPath, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
    }

    /// The log is appended to through a descriptor kept open; a rewrite replaces the file, so an append after it
    /// must reach the new file, not the unlinked old one.
    @Test func appendsAfterARewriteReachTheNewLog() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        var first = record(store, destination: root + "/a")
        first.state = .completed
        var second = record(store, destination: root + "/b")
        second.state = .completed
        var third = record(store, destination: root + "/c")
        third.state = .completed
        try store.appendToLog(first)
        try store.appendToLog(second)
        store.removeFromLog(first.id)  // rewrites the log while its descriptor is open
        try store.appendToLog(third)
        let lines = try String(contentsOfFile: store.taskLogPath, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2, "\(lines)")
        let reopened = try StateStore(directory: root)
        #expect(reopened.loadAll().logged.map(\.id) == [second.id, third.id])
        // A second store on the same directory appends at the end too (O_APPEND), after the first one's lines.
        var fourth = record(store, destination: root + "/d")
        fourth.state = .completed
        try reopened.appendToLog(fourth)
        try store.appendToLog(first)
        #expect(
            try StateStore(directory: root).loadAll().logged.map(\.id) == [second.id, third.id, fourth.id, first.id])
    }

    @Test func corruptRecordIsSetAsideNotDeleted() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        let good = record(store, destination: root + "/a")
        try store.save(good)
        let bad = root + "/\(DownloadTaskID.random()).json"
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: bad))
        let loaded = store.loadAll()
        #expect(loaded.records.map(\.id) == [good.id])
        #expect(loaded.problems.count == 1)
        #expect(loaded.problems.allSatisfy { DownloadError.corruptRecord ~= $0 })
        #expect(!FileManager.default.fileExists(atPath: bad))
        let aside = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains(".corrupt-") }
        #expect(aside.count == 1)
    }

    @Test func recordWithAbsolutePathsIsRejected() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        var r = record(store, destination: root + "/a")
        r.destination = "/etc/passwd"
        try store.save(r)
        let loaded = store.loadAll()
        #expect(loaded.records.isEmpty)
        #expect(loaded.problems.count == 1)
    }

    @Test func partialWithoutRecordIsRemovedOnLoad() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root)
        let kept = record(store, destination: root + "/a")
        try store.save(kept)
        let names = [kept.partial, "\(DownloadTaskID.random()).part", "\(DownloadTaskID.random()).part", "notes.part"]
        for name in names { try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/" + name)) }
        // A partial beside a record set aside as corrupt stays with it.
        try Data("{".utf8).write(to: URL(fileURLWithPath: root + "/" + names[2].dropLast(5) + ".json"))
        let loaded = store.loadAll()
        #expect(loaded.records.map(\.id) == [kept.id])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasSuffix(".part") })
        #expect(left == [kept.partial, names[2], "notes.part"])
    }

    @Test func durableSavesReadBackTheSame() throws {
        let root = makeTemporaryDirectory()
        let store = try StateStore(directory: root, syncsToDisk: true)
        var r = record(store, destination: root + "/a")
        r.totalLength = 7
        try store.save(r)
        #expect(store.loadAll().records.first?.totalLength == 7)
        #expect(!FileManager.default.fileExists(atPath: store.recordPath(r.id) + ".tmp"))
    }

    @Test func unwritableStateDirectoryIsAClearError() {
        #expect { try StateStore(directory: "/proc/nope/state") } throws: { DownloadError.fileSystem ~= $0 }
    }

    @Test func taskIdentifiersAreLowerCaseVersion4UUIDs() {
        let ids = (0..<1000).map { _ in DownloadTaskID.random().rawValue }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
            let characters = Array(id)
            #expect(characters[14] == "4")
            #expect("89ab".contains(characters[19]))
        }
    }
}
