import Foundation
import SystemCalls
import Testing

@testable import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory under the system temporary directory, open, and whether its file system reports every change to
/// inotify (only there does the watch watch anything).
private func temporaryRoot() throws -> (path: String, descriptor: Int32, isLocal: Bool) {
    let path = NSTemporaryDirectory() + "file-change-watch-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
    let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    return (path, descriptor, descriptor >= 0 && isOnLocalFileSystem(descriptor))
}

/// Whether the system temporary directory is somewhere the watch works: Linux, a local file system.
private let watchable: Bool = {
    #if os(Linux)
    guard let root = try? temporaryRoot() else { return false }
    defer {
        close(root.descriptor)
        try? FileManager.default.removeItem(atPath: root.path)
    }
    return root.isLocal
    #else
    return false
    #endif
}()

/// A watched file: `size` bytes at `sub/data.bin` under a fresh temporary root, open, watched by a new watch.
private struct WatchedFile {
    let root: (path: String, descriptor: Int32, isLocal: Bool)
    let path: String
    let file: Int32
    let watch: FileChangeWatch
    let generation: UInt64

    /// Runs `body` with a watched file, and removes it all afterwards.
    static func with(size: Int, _ body: (WatchedFile) throws -> Void) throws {
        let root = try temporaryRoot()
        defer {
            close(root.descriptor)
            try? FileManager.default.removeItem(atPath: root.path)
        }
        let path = root.path + "/sub/data.bin"
        try Data(repeating: 0x41, count: size).write(to: URL(fileURLWithPath: path))
        let file = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        let watch = FileChangeWatch(watchLimit: 16)
        let generation = try #require(watch.watch(relativePath: "sub/data.bin", root: root.descriptor, file: file))
        try body(WatchedFile(root: root, path: path, file: file, watch: watch, generation: generation))
    }

    private init(
        root: (path: String, descriptor: Int32, isLocal: Bool), path: String, file: Int32, watch: FileChangeWatch,
        generation: UInt64
    ) {
        self.root = root
        self.path = path
        self.file = file
        self.watch = watch
        self.generation = generation
    }
}

@Suite("FileChangeWatch: the kernel's word on cached files")
struct FileChangeWatchTests {
    @Test("the count moves on for writes, times and names changed on the way; not for reads", .enabled(if: watchable))
    func countsChanges() throws {
        try WatchedFile.with(size: 4096) { watched in try countsChanges(watched) }
    }

    private func countsChanges(_ watched: WatchedFile) throws {
        let (root, path, file, watch, generation) = (
            watched.root, watched.path, watched.file, watched.watch, watched.generation
        )
        var last = watch.changes()
        #expect(last.generation == generation)

        /// Runs `change` and tells whether the count moved on.
        func moves(_ change: () throws -> Void) rethrows -> Bool {
            try change()
            let now = watch.changes()
            defer { last = now }
            return now.count != last.count
        }
        // Reading the file, as the server does for every body, is not a change.
        #expect(
            !moves {
                var buffer = [UInt8](repeating: 0, count: 100)
                _ = pread(file, &buffer, buffer.count, 0)
            })
        #expect(!moves {})
        #expect(
            try moves {
                let handle = try #require(FileHandle(forWritingAtPath: path))
                try handle.write(contentsOf: Data([0x42]))
                try handle.close()
            })
        #expect(
            moves {
                var times = [timeval(tv_sec: 1_700_000_000, tv_usec: 0), timeval(tv_sec: 1_700_000_000, tv_usec: 0)]
                _ = utimes(path, &times)
            })
        // Names in a directory on the way: the root's and the file's own.
        #expect(try moves { try Data().write(to: URL(fileURLWithPath: root.path + "/other")) })
        #expect(moves { _ = rename(root.path + "/other", root.path + "/sub/other") })
        #expect(moves { _ = unlink(root.path + "/sub/other") })
        #expect(moves { _ = rename(path, root.path + "/moved.bin") })
    }

    @Test(
        "a request read before the last read of the queue began reuses its count; one read later reads the queue",
        .enabled(if: watchable))
    func readByReusesADrain() throws {
        try WatchedFile.with(size: 16) { watched in try readByReusesADrain(watched.path, watched.watch) }
    }

    private func readByReusesADrain(_ path: String, _ watch: FileChangeWatch) throws {
        let arrived = ContinuousClock.now
        let drained = watch.changes(readBy: arrived)
        // A change after the request arrived: for that request the count read since stands, with no new read.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data([0x42]))
        try handle.close()
        #expect(watch.changes(readBy: arrived).count == drained.count)
        // A request read after the change (after the queue's last read began) reads the queue and sees it.
        let later = ContinuousClock.now
        let fresh = watch.changes(readBy: later)
        #expect(fresh.count != drained.count)
        // And one without a moment always reads the queue.
        try Data([0x43]).write(to: URL(fileURLWithPath: path))
        #expect(watch.changes().count != fresh.count)
    }

    @Test("past its limit of watches the queue starts over in a new generation", .enabled(if: watchable))
    func limitStartsANewGeneration() throws {
        let root = try temporaryRoot()
        defer {
            close(root.descriptor)
            try? FileManager.default.removeItem(atPath: root.path)
        }
        let watch = FileChangeWatch(watchLimit: 4)
        var generations: [UInt64] = []
        for index in 0..<4 {
            let name = "sub/f\(index).bin"
            try Data([1]).write(to: URL(fileURLWithPath: root.path + "/" + name))
            let file = open(root.path + "/" + name, O_RDONLY | O_CLOEXEC)
            defer { close(file) }
            generations.append(try #require(watch.watch(relativePath: name, root: root.descriptor, file: file)))
        }
        // The root, sub, and f0, f1: four watches; f2 finds the limit reached and starts over.
        #expect(generations[0] == generations[1])
        #expect(generations[2] != generations[1])
        #expect(watch.changes().generation == generations[3])
    }

    @Test("nothing is watched without an open root")
    func noRootNoWatch() throws {
        let watch = FileChangeWatch(watchLimit: 16)
        #expect(watch.watch(relativePath: "data.bin", root: -1, file: 0) == nil)
        #expect(watch.changes().count == 0)
    }
}
