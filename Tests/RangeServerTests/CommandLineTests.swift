import Foundation
import Subprocess
import TestSupport
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

    /// Starts `rangeserver` in the package root, with an 80-column terminal for its help text.
    static func start(_ arguments: [String]) async throws -> ChildProcess {
        try await ChildProcess.start(
            executable, arguments, directory: Fixtures.packageRoot, environment: .inherit.updating(["COLUMNS": "80"]))
    }

    /// Waits for exit, at most `seconds`, and returns the exit status; nil when it overstayed (it is killed)
    /// or died by a signal.
    static func exitCode(_ child: ChildProcess, seconds: Int = 10) async -> Int32? {
        guard case .exited(let code) = await child.wait(limit: .seconds(seconds)) else { return nil }
        return code
    }

    @Test("--help is pinned: a changed interface is a visible change")
    func helpIsPinned() async throws {
        let child = try await Self.start(["--help"])
        #expect(await Self.exitCode(child) == 0)
        let text = child.output
        let pinned = try String(
            contentsOfFile: Fixtures.packageRoot + "/fixtures/cli/rangeserver-help.txt", encoding: .utf8)
        #expect(text == pinned)
    }

    @Test(
        "the first stdout line names the real port, the server answers, and SIGTERM and SIGINT stop it with status 0",
        arguments: [SIGTERM, SIGINT])
    func listensAndStopsCleanly(signal: Int32) async throws {
        let child = try await Self.start(["--port", "0", "--root", Fixtures.files])
        let line = await child.firstLine()
        #expect(line.hasPrefix("rangeserver listening on http://127.0.0.1:"))
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        #expect(port > 0)
        let response = try rawRequest(port: port, "GET", "/healthz")
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok\n")
        child.send(signal)
        #expect(await Self.exitCode(child) == 0)
        // One access-log line per request on stderr, then the stop notice: the format scripts and docs read.
        let lines = child.errors.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("127.0.0.1 \"GET /healthz HTTP/1.1\" 200 3 complete ") == true)
        #expect(lines.first?.hasSuffix("ms") == true)
        #expect(lines.last == "rangeserver: stopped on signal \(signal)")
    }

    @Test("--quiet writes no access log")
    func quietWritesNoAccessLog() async throws {
        let child = try await Self.start(["--port", "0", "--root", Fixtures.files, "--quiet"])
        let line = await child.firstLine()
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        _ = try rawRequest(port: port, "GET", "/healthz")
        child.send(SIGTERM)
        #expect(await Self.exitCode(child) == 0)
        #expect(child.errors.isEmpty)
    }

    @Test("a port in use is one clear line on stderr and a non-zero exit")
    func portInUse() async throws {
        let first = try await Self.start(["--port", "0", "--root", Fixtures.files, "--quiet"])
        let line = await first.firstLine()
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        let second = try await Self.start(["--port", String(port), "--root", Fixtures.files])
        let status = await Self.exitCode(second)
        first.send(SIGTERM)
        _ = await first.wait()
        #expect(status != nil && status != 0)
        let message = second.errors
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
            (["--port", "0", "--tls-port", "70000"], "--tls-port"),
            (["--port", "0", "--tls-port", "0", "--tls-cert", "/definitely/not/cert.pem"], "--tls-key"),
            (
                [
                    "--port", "0", "--tls-port", "0", "--tls-cert", "/definitely/not/cert.pem", "--tls-key",
                    "Package.swift",
                ],
                "/definitely/not/cert.pem"
            ),
            (
                ["--port", "0", "--tls-port", "0", "--tls-cert", "Package.swift", "--tls-key", "Package.swift"],
                "Package.swift"
            ),
            (["--port", "0", "--tls-port", "0", "--tls-name", "not a name"], "not a name"),
            (["--port", "0", "--tls-port", "0", "--tls-dir", "Package.swift"], "Package.swift"),
            (["--port", "0", "--run-limit", "0"], "--run-limit must be from 1"),
            (["--port", "0", "--run-expiry", "0"], "--run-expiry must be from 1"),
        ])
    func badInput(arguments: [String], culprit: String) async throws {
        let child = try await Self.start(arguments)
        let status = await Self.exitCode(child)
        #expect(status != nil && status != 0)
        let message = child.errors
        #expect(message.contains(culprit), "\(message)")
        #expect(!message.contains("Fatal error"))
        #expect(!message.contains("Stack dump"))
        #expect(child.output.isEmpty, "a server that failed to start printed \(child.output)")
    }

    @Test("--tls-port prints the https line second, with the CA's path, and the port serves what the CA signed")
    func tlsLines() async throws {
        let directory = try FaultWire.temporaryDirectory("cli-tls")
        let child = try await Self.start([
            "--port", "0", "--root", Fixtures.files, "--quiet", "--tls-port", "0", "--tls-dir", directory,
            "--tls-faults",
        ])
        defer { child.send(SIGTERM) }
        let lines = await child.lines(8)
        try #require(lines.count == 8, "\(lines)")
        let plain = lines[0]
        #expect(plain.hasPrefix("rangeserver listening on http://127.0.0.1:"))
        let secure = lines[1]
        let prefix = "rangeserver listening on https://127.0.0.1:"
        let suffix = " (CA: \(directory)/ca.pem)"
        #expect(secure.hasPrefix(prefix) && secure.hasSuffix(suffix), "\(secure)")
        let tlsPort = try #require(Int(secure.dropFirst(prefix.count).dropLast(suffix.count)))
        // One line per TLS fault, in the documented order, then the blackhole (a loaded scenario needs it).
        let faultLines = Array(lines[2..<7])
        for (line, fault) in zip(
            faultLines, ["handshake-fail", "handshake-stall", "cert-expired", "cert-wrong-host", "cert-untrusted"])
        {
            #expect(line.hasPrefix("rangeserver tls-fault \(fault) on https://127.0.0.1:"), "\(line)")
        }
        #expect(lines[7].hasPrefix("rangeserver blackhole on 127.0.0.1:"))
        let trust = try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8)
        let response = try await TLSProbe.get(port: tlsPort, target: "/files/hello.txt", trustPEM: trust)
        #expect(String(decoding: response.bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 200")
        child.send(SIGTERM)
        #expect(await Self.exitCode(child) == 0)
    }
}
