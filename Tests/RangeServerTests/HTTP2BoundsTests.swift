import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// The HTTP/2 listener's bounds, since its port may face a LAN: a raw client's flood of resets (the rapid-reset
/// attack, CVE-2023-44487) closes that client's connection with GOAWAY ENHANCE_YOUR_CALM, while the server's memory
/// and its other connections are unharmed. The server runs as its own process, so its memory is its own.
@Suite("HTTP/2 bounds", .timeLimit(.minutes(3)))
struct HTTP2BoundsTests {
    @Test("a rapid-reset flood ends that connection with ENHANCE_YOUR_CALM; memory and other clients unharmed")
    func rapidReset() async throws {
        // The build's own rangeserver (under scripts/sanitize, the instrumented one beside the test bundle).
        let executable = CommandLineTests.executable
        // No scenarios: none of them opens a listener of its own, so the two listening lines are the only ones.
        let scenarios = try FaultWire.temporaryDirectory("h2-bounds")
        let server = try await ChildProcess.start(
            executable,
            ["--port", "0", "--h2c-port", "0", "--root", Fixtures.files, "--scenarios", scenarios, "--quiet"],
            directory: Fixtures.packageRoot)
        defer { server.send(SIGTERM) }
        let lines = await server.lines(2, limit: .seconds(scaled(seconds: 30)))
        // `rangeserver listening on http://127.0.0.1:PORT (HTTP/2 cleartext, prior knowledge)`.
        let line = try #require(lines.first { $0.contains("HTTP/2 cleartext") }, "\(lines)")
        let address = try #require(line.split(separator: " ").dropFirst(3).first)
        let port = try #require(Int(address.split(separator: ":").last ?? ""))
        let pid = try #require(server.processIdentifier)
        // Warm: the first connection's allocations are not the flood's.
        _ = try await H2Probe.run(port: port, requests: ["/bytes/1K"])
        let before = residentKiB(of: pid)
        #expect(before > 0, "the server's resident set, read from /proc/\(pid)/status")
        var floods: [H2Probe.Report] = []
        for _ in 0..<5 {
            floods.append(
                try await H2Probe.run(port: port, requests: [], options: ["--flood-resets", "2000"], timeout: 5))
        }
        for flood in floods {
            #expect(flood.goaways.contains { $0.code == 11 }, "GOAWAY ENHANCE_YOUR_CALM: \(flood.goaways)")
            #expect(flood.floodSent >= 200)
        }
        let other = try await H2Probe.run(port: port, requests: ["/bytes/1M"])
        #expect(try other.stream(0).bytes == 1 << 20 && other.stream(0).endStream, "another client is still served")
        let after = residentKiB(of: pid)
        // Under AddressSanitizer (scripts/sanitize address sets ASAN_OPTIONS) the server keeps what it frees in the
        // sanitizer's quarantine, 256 MiB by default, so its resident set says nothing of what it holds: 37 MiB more
        // after the floods in one such run. The bound is checked everywhere else, CI's runs included.
        if ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil {
            #expect(after - before < 32 * 1024, "resident set grew from \(before) KiB to \(after) KiB")
        }
    }
}
