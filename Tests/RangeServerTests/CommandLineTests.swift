import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `rangeserver` executable, run as a child process, the way users and scripts run it.
@Suite("rangeserver command line")
struct CommandLineTests {
    /// The built `rangeserver` next to the test bundle.
    static let executable: String = {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        for candidate in [bundleDirectory + "/rangeserver", Fixtures.packageRoot + "/.build/debug/rangeserver"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return Fixtures.packageRoot + "/.build/debug/rangeserver"
    }()

    /// A running child with its pipes.
    final class Child {
        let process = Process()
        let output = Pipe()
        let error = Pipe()

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: CommandLineTests.executable)
            process.arguments = arguments
            process.currentDirectoryURL = URL(fileURLWithPath: Fixtures.packageRoot)
            var environment = ProcessInfo.processInfo.environment
            environment["COLUMNS"] = "80"
            process.environment = environment
            process.standardOutput = output
            process.standardError = error
            try process.run()
        }

        /// The first stdout line, read byte by byte so nothing later is consumed.
        func firstLine() -> String {
            var bytes: [UInt8] = []
            let handle = output.fileHandleForReading
            while let byte = try? handle.read(upToCount: 1), let first = byte.first, first != 10 {
                bytes.append(first)
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Waits for exit, at most `seconds`; kills the child (by its PID) if it overstays.
        func wait(seconds: Double = 10) -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            return process.terminationStatus
        }

        var standardError: String {
            String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
    }

    @Test("--help is pinned: a changed interface is a visible change")
    func helpIsPinned() throws {
        let child = try Child(["--help"])
        let text = String(decoding: child.output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.wait() == 0)
        let pinned = try String(
            contentsOfFile: Fixtures.packageRoot + "/fixtures/cli/rangeserver-help.txt", encoding: .utf8)
        #expect(text == pinned)
    }

    @Test(
        "the first stdout line names the real port, the server answers, and SIGTERM and SIGINT stop it with status 0",
        arguments: [SIGTERM, SIGINT])
    func listensAndStopsCleanly(signal: Int32) throws {
        let child = try Child(["--port", "0", "--root", Fixtures.files])
        let line = child.firstLine()
        #expect(line.hasPrefix("rangeserver listening on http://127.0.0.1:"))
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        #expect(port > 0)
        let response = try rawRequest(port: port, "GET", "/healthz")
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok\n")
        kill(child.process.processIdentifier, signal)
        #expect(child.wait() == 0)
        // One access-log line per request on stderr, then the stop notice: the format scripts and docs read.
        let lines = child.standardError.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("127.0.0.1 \"GET /healthz HTTP/1.1\" 200 3 complete ") == true)
        #expect(lines.first?.hasSuffix("ms") == true)
        #expect(lines.last == "rangeserver: stopped on signal \(signal)")
    }

    @Test("--quiet writes no access log")
    func quietWritesNoAccessLog() throws {
        let child = try Child(["--port", "0", "--root", Fixtures.files, "--quiet"])
        let port = try #require(Int(child.firstLine().split(separator: ":").last ?? ""))
        _ = try rawRequest(port: port, "GET", "/healthz")
        kill(child.process.processIdentifier, SIGTERM)
        #expect(child.wait() == 0)
        #expect(child.standardError.isEmpty)
    }

    @Test("a port in use is one clear line on stderr and a non-zero exit")
    func portInUse() throws {
        let first = try Child(["--port", "0", "--root", Fixtures.files, "--quiet"])
        let port = try #require(Int(first.firstLine().split(separator: ":").last ?? ""))
        defer {
            kill(first.process.processIdentifier, SIGTERM)
            _ = first.wait()
        }
        let second = try Child(["--port", String(port), "--root", Fixtures.files])
        let status = second.wait()
        #expect(status != nil && status != 0)
        let message = second.standardError
        #expect(message.split(separator: "\n").count == 1)
        #expect(message.contains("cannot listen on 127.0.0.1:\(port)"))
        #expect(message.contains("in use"))
    }

    @Test(
        "bad input is reported in a line naming the culprit, never a crash",
        arguments: [
            (["--port", "0", "--root", "/definitely/not/here"], "/definitely/not/here"),
            (["--port", "70000"], "--port"),
            (["--port", "0", "--bogus"], "--bogus"),
            (["--port", "0", "--threads", "0"], "--threads"),
            (["--port", "0", "--connection-memory", "4K"], "--connection-memory"),
            (["--port", "0", "--connection-memory", "lots"], "lots"),
            (["--port", "0", "--host", "not-an-address"], "not-an-address"),
            (["--port", "0", "--scenarios", "/definitely/not/scenarios"], "/definitely/not/scenarios"),
        ])
    func badInput(arguments: [String], culprit: String) throws {
        let child = try Child(arguments)
        let status = child.wait()
        #expect(status != nil && status != 0)
        let message = child.standardError
        #expect(message.contains(culprit))
        #expect(!message.contains("Fatal error"))
        #expect(!message.contains("Stack dump"))
    }
}
