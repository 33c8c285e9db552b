import Foundation
import RangeServer
import Testing

@testable import DownloadEngine

/// `rangefetch --cacert` and `--insecure`, run as the built binary against an embedded TLS rangeserver.
@Suite("rangefetch over TLS")
struct CLITLSTests {
    @Test("--cacert trusts the server's CA; without it the certificate is refused in one line; --insecure accepts")
    func cacertAndInsecure() async throws {
        try await withRangeServer(tlsServerConfiguration(faults: true)) { server in
            let dir = makeTemporaryDirectory()
            let authority = try #require(server.certificateAuthorityPath)
            let port = try #require(server.tlsPort)
            let path = "/bytes/256K?seed=441"
            let url = try #require(server.tlsBaseURL) + path
            let trusted = try await Child.start([url, "-o", dir + "/a", "--cacert", authority], logs: dir + "/trusted")
            #expect(try await trusted.wait() == 0, "\(trusted.errors)")
            #expect(try sha256(ofFile: dir + "/a") == expectedSHA256(size: 256 << 10, seed: 441))

            // The system's roots alone do not know the throwaway CA: refused at once, exit 1, one line naming it.
            let refused = try await Child.start([url, "-o", dir + "/b", "--json"], logs: dir + "/refused")
            #expect(try await refused.wait() == 1)
            let lines = refused.errors.split(separator: "\n")
            #expect(lines.count == 1, "stderr: \(refused.errors)")
            #expect(
                lines.first?.hasPrefix("rangefetch: \(url): TLS certificate of 127.0.0.1:\(port) not accepted") == true)
            #expect(refused.output.contains("\"kind\":\"tls-certificate\""))
            #expect(!refused.output.contains("\"event\":\"retrying\""))
            #expect(!FileManager.default.fileExists(atPath: dir + "/b"))
            // Only the trusted run reached HTTP.
            #expect(await settledRequests(server, path).count == 1)

            let untrusted = try #require(server.tlsFaultBaseURL(.certUntrusted)) + "/bytes/64K?seed=442"
            let insecure = try await Child.start([untrusted, "-o", dir + "/c", "--insecure"], logs: dir + "/insecure")
            #expect(try await insecure.wait() == 0, "\(insecure.errors)")
            #expect(try sha256(ofFile: dir + "/c") == expectedSHA256(size: 64 << 10, seed: 442))
            // --cacert adds the server's CA; a certificate from another CA is still refused.
            let stranger = try await Child.start(
                [untrusted, "-o", dir + "/d", "--cacert", authority], logs: dir + "/stranger")
            #expect(try await stranger.wait() == 1)
            #expect(stranger.errors.contains("TLS certificate of 127.0.0.1:"), "\(stranger.errors)")
        }
    }

    @Test("a bad --cacert (missing, or no PEM in it): one line on stderr naming the file, exit 64, no stack trace")
    func badCACert() async throws {
        let dir = makeTemporaryDirectory()
        try "not a certificate\n".write(toFile: dir + "/text.pem", atomically: true, encoding: .utf8)
        for (file, reason) in [(dir + "/missing.pem", "no such file"), (dir + "/text.pem", "no PEM certificate in it")]
        {
            let child = try await Child.start(
                ["https://127.0.0.1:1/x", "-o", dir + "/x", "--cacert", file], logs: dir + "/bad")
            #expect(try await child.wait() == 64)
            #expect(child.errors == "rangefetch: --cacert: CA file '\(file)': \(reason)\n")
            #expect(child.output.isEmpty)
        }
    }
}
