import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

/// The names, sizes and contents of the files in `directory`, to show that nothing in it changed.
private func contents(of directory: String) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
        files[name] = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
    }
    return files
}

@Suite("State directory lock", .serialized)
struct StateDirectoryLockTests {
    @Test("a second engine in the same process fails at once, naming the PID, and changes no file")
    func secondEngineInSameProcessFails() async throws {
        let state = makeTemporaryDirectory() + "/.rangefetch"
        let first = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
        let lockFile = state + "/" + StateDirectoryLock.fileName
        #expect(try String(contentsOfFile: lockFile, encoding: .utf8) == "\(getpid())\n")
        // What a loading engine would delete: a save cut short and a partial file no record claims. Still there
        // afterwards, they show that the refused engine did not load the directory.
        try Data("{".utf8).write(to: URL(fileURLWithPath: state + "/x.json.tmp"))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: state + "/\(UUID().uuidString.lowercased()).part"))
        let before = try contents(of: state)
        #expect(throws: DownloadError.stateDirectoryLocked(state, by: getpid())) {
            try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
        }
        do {
            _ = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
            Issue.record("a second engine was created on a locked state directory")
        } catch {
            #expect(DownloadError.stateDirectoryLocked ~= error)
            #expect("\(error)" == "state directory '\(state)' is in use by process \(getpid())")
            #expect((error as? DownloadError)?.kind == "state-directory-locked")
        }
        #expect(try contents(of: state) == before)
        await first.shutdown()
    }

    @Test("after shutdown(), or once the engine is gone, a new engine on the directory works")
    func releasedAtShutdownAndDeinit() async throws {
        let dir = makeTemporaryDirectory()
        let state = dir + "/.rangefetch"
        let first = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
        let idle = try await first.add(.init(url: "http://127.0.0.1:1/x", destination: dir + "/x"), start: false)
        await first.shutdown()
        // Released, the lock file names nobody.
        #expect(try String(contentsOfFile: state + "/" + StateDirectoryLock.fileName, encoding: .utf8) == "")
        let second = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
        // The first no longer holds the lock, so it no longer writes to the directory.
        let shutDown = DownloadError.invalidState("the engine is shut down")
        await #expect(throws: shutDown) { try await first.cancel(idle) }
        await #expect(throws: shutDown) { try await first.remove(idle) }
        await #expect(throws: shutDown) { try await first.pause(idle) }
        await second.shutdown()
        // Never shut down: the lock goes with the engine.
        do {
            let dropped = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
            #expect(dropped.stateDirectory == state)
        }
        let third = try DownloadEngine(stateDirectory: state, configuration: testConfiguration())
        await third.shutdown()
    }

    @Test("two rangefetch processes: the second fails at once with one line; the first completes, its record intact")
    func secondProcessFails() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let state = dir + "/.rangefetch"
            // 8 s at 1 MiB/s: long enough that the second is refused while the first runs, even on a loaded machine.
            let url = server.baseURL + "/bytes/8M?seed=301&rate=\(paced(1024))"
            let first = try await Child.start([url, "-o", dir + "/a.bin"], logs: dir + "/first")
            try await eventually(.seconds(20), "partial bytes") {
                partialFiles(state).contains { (fileSize($0) ?? 0) > 0 }
            }
            let pid = try #require(first.process.processIdentifier)
            let started = ContinuousClock.now
            let second = try await Child.start([url, "-o", dir + "/a.bin"], logs: dir + "/second")
            #expect(try await second.wait() == 1)
            // It never waits (no --wait-lock): refused while the first still runs, checked below; this only bounds it.
            #expect(ContinuousClock.now - started < scaled(.seconds(15)), "the second did not fail at once")
            #expect(
                second.errors
                    == "rangefetch: state directory '\(state)' is in use by process \(pid) (use --wait-lock to wait)\n")
            #expect(!first.process.hasExited, "the first ended before the second was refused: nothing was tested")

            #expect(try await first.wait() == 0, "\(first.errors)")
            #expect(try sha256(ofFile: dir + "/a.bin") == expectedSHA256(size: 8 << 20, seed: 301))
            let records = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".json") }
            #expect(records.count == 1)
            let record = try StateStore.decode(Data(contentsOf: URL(fileURLWithPath: state + "/" + records[0])))
            #expect(record.state == .completed)
            #expect(await settledRequests(server, "/bytes/8M?seed=301").count == 1)
        }
    }

    @Test("a lock left by a process killed with SIGKILL does not block: the next run resumes and completes")
    func killedHolderLeavesNoLock() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let state = dir + "/.rangefetch"
            let url = server.baseURL + "/bytes/2M?seed=302&rate=\(paced(1024))"
            let arguments = [url, "-o", dir + "/k.bin"]
            let child = try await Child.start(arguments, logs: dir + "/killed")
            let pid = try #require(child.process.processIdentifier)
            let killed = await kill(child, within: 30) {
                partialFiles(state).contains { (fileSize($0) ?? 0) >= 300_000 }
            }
            try #require(killed, "the partial file never passed 300,000 bytes")
            #expect(try await child.wait() == 128 + SIGKILL)
            // The killed holder's PID is still in the file; only the kernel's lock is gone.
            #expect(
                try String(contentsOfFile: state + "/" + StateDirectoryLock.fileName, encoding: .utf8) == "\(pid)\n")

            let rerun = try await Child.start(arguments, logs: dir + "/rerun")
            #expect(try await rerun.wait() == 0, "\(rerun.errors)")
            #expect(try sha256(ofFile: dir + "/k.bin") == expectedSHA256(size: 2 << 20, seed: 302))
            let gets = await settledRequests(server, "/bytes/2M?seed=302").sorted { $0.seq < $1.seq }
            #expect(gets.count >= 2, "both GETs in the journal")
            #expect(gets.last?.requestHeaders["range"] != nil)
        }
    }

    @Test("--wait-lock: Ctrl-C ends the wait with 130; otherwise it waits for the first and finds the file complete")
    func waitLock() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let state = dir + "/.rangefetch"
            // 8 s: both waiting runs must start, print their line and (the first) be interrupted while the first
            // download runs (at 2 s, a loaded run saw it end before the second waiter had started).
            let url = server.baseURL + "/bytes/4M?seed=303&rate=\(paced(512))"
            let arguments = [url, "-o", dir + "/w.bin"]
            let first = try await Child.start(arguments, logs: dir + "/first")
            try await eventually(.seconds(20), "partial bytes") {
                partialFiles(state).contains { (fileSize($0) ?? 0) > 0 }
            }
            let pid = try #require(first.process.processIdentifier)
            let waiting =
                "rangefetch: state directory '\(state)' is in use by process \(pid); waiting until it is free\n"

            let interrupted = try await Child.start(arguments + ["--wait-lock"], logs: dir + "/interrupted")
            try await eventually(.seconds(10), "the waiting line") { interrupted.errors == waiting }
            interrupted.process.send(SIGINT)
            #expect(try await interrupted.wait(timeout: .seconds(10)) == 130)
            #expect(interrupted.errors == waiting)

            let patient = try await Child.start(arguments + ["--wait-lock"], logs: dir + "/patient")
            try await eventually(.seconds(10), "the waiting line") { patient.errors == waiting }
            #expect(try await first.wait() == 0, "\(first.errors)")
            #expect(try await patient.wait() == 0, "\(patient.errors)")
            #expect(patient.errors == waiting)
            #expect(try sha256(ofFile: dir + "/w.bin") == expectedSHA256(size: 4 << 20, seed: 303))
            // It found the task completed in the state directory: nothing fetched twice.
            #expect(await settledRequests(server, "/bytes/4M?seed=303").count == 1)
        }
    }
}
