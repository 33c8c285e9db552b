import Foundation
import RangeServer
import TestSupport
import Testing

@testable import DownloadEngine

@Suite("URL lists (-i)")
struct InputListTests {
    static let digest = String(repeating: "ab", count: 32)

    @Test("URLs with indented out= and checksum= lines; blank lines, comments and CRLF ignored")
    func parses() throws {
        let text = """
            # a comment
            http://127.0.0.1:1/a.bin
              out=renamed.bin
            \tchecksum=SHA-256=\(Self.digest.uppercased())

            https://example.com/b?x=1\r
              # an indented comment
            http://127.0.0.1:1/c
             out=sub/dir/c.bin
            """
        let list = try InputList(parsing: text, source: "list.txt")
        #expect(
            list.entries == [
                .init(url: "http://127.0.0.1:1/a.bin", output: "renamed.bin", sha256: Self.digest, line: 2),
                .init(url: "https://example.com/b?x=1", line: 6),
                .init(url: "http://127.0.0.1:1/c", output: "sub/dir/c.bin", line: 8),
            ])
        #expect(try InputList(parsing: "", source: "empty").entries.isEmpty)
    }

    @Test(
        "a bad line is one error naming FILE:LINE",
        arguments: [
            ("  out=x", "list.txt:1: 'out=x' comes before any URL"),
            ("ftp://h/x", "list.txt:1: 'ftp://h/x' is not an http or https URL"),
            ("not a url", "list.txt:1: one URL per line"),
            ("http://h/a\thttp://mirror/a", "list.txt:1: one URL per line"),
            ("/relative/path", "list.txt:1: '/relative/path' is not an http or https URL"),
            ("http://h/a\n  dir=/tmp", "list.txt:2: unsupported option 'dir'"),
            ("http://h/a\n  out", "list.txt:2: 'out' is not an option"),
            ("http://h/a\n  out=", "list.txt:2: out=: empty"),
            ("http://h/a\n  out=/etc/passwd", "list.txt:2: out=/etc/passwd: must be relative"),
            ("http://h/a\n  out=../x", "list.txt:2: out=../x: has an empty, '.' or '..' component"),
            ("http://h/a\n  out=a//b", "list.txt:2: out=a//b: has an empty"),
            ("http://h/a\n  out=a\u{1}b", "list.txt:2: out=a\u{1}b: has a control character"),
            ("http://h/a\n  out=x\n  out=y", "list.txt:3: out= given twice for http://h/a"),
            ("http://h/a\n  out=x\nhttp://h/b\n\n  out=x", "list.txt:5: out=x is also the output of line 1"),
            ("http://h/a\n  checksum=md5=abc", "list.txt:2: checksum=md5=abc: expected sha-256="),
            ("http://h/a\n  checksum=sha-256=abc", "list.txt:2: checksum=sha-256=abc: expected sha-256="),
            (
                "http://h/a\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n  checksum=sha-256=0",
                "list.txt:3: checksum= given twice"
            ),
        ])
    func badLine(text: String, message: String) {
        do {
            _ = try InputList(parsing: text, source: "list.txt")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.kind == "invalid-input-list")
            #expect(error.message.hasPrefix(message), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    /// Runs `rangefetch` with `arguments` and `input` as its standard input.
    static func run(_ arguments: [String], input: String, logs: String) async throws -> Child {
        let process = try await ChildProcess.start(
            "/bin/sh", ["-c", "exec \"$0\" \"$@\" < \"\(input)\"", rangefetchPath] + arguments)
        return Child(process: process, logs: logs)
    }

    @Test("rangefetch -i FILE and -i -: out= names, checksum= verified, argument URLs first")
    func commandLine() async throws {
        try await withRangeServer(fixturesServerConfiguration) { server in
            let dir = makeTemporaryDirectory()
            let list = """
                # two files
                \(server.baseURL)/bytes/64K?seed=91
                  out=first.bin
                  checksum=sha-256=\(expectedSHA256(size: 64 << 10, seed: 91))
                \(server.baseURL)/bytes/32K?seed=92
                """
            try list.write(toFile: dir + "/list.txt", atomically: true, encoding: .utf8)
            let run = try await Child.start(
                ["-i", dir + "/list.txt", "-o", dir + "/out", server.baseURL + "/bytes/16K?seed=93"], logs: dir + "/run"
            )
            #expect(try await run.wait() == 0, "\(run.errors)")
            #expect(try sha256(ofFile: dir + "/out/first.bin") == expectedSHA256(size: 64 << 10, seed: 91))
            #expect(try sha256(ofFile: dir + "/out/32K") == expectedSHA256(size: 32 << 10, seed: 92))
            #expect(try sha256(ofFile: dir + "/out/16K") == expectedSHA256(size: 16 << 10, seed: 93))

            // Standard input, with a checksum= that the bytes do not match: exit 3.
            let wrong = "\(server.baseURL)/bytes/8K?seed=94\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n"
            try wrong.write(toFile: dir + "/wrong.txt", atomically: true, encoding: .utf8)
            let stdin = try await Self.run(
                ["-i", "-", "-o", dir + "/in/"], input: dir + "/wrong.txt", logs: dir + "/stdin")
            #expect(try await stdin.wait() == 3, "\(stdin.errors)")
            #expect(stdin.errors.contains("8K?seed=94"))
            #expect(fileSize(dir + "/in/8K") == nil)
        }
    }

    @Test("rangefetch -i: a bad line, or a digest given twice that disagrees, is one usage line, exit 64")
    func usageErrors() async throws {
        let dir = makeTemporaryDirectory()
        try "http://127.0.0.1:1/a\n  out=x\n  size=3\n".write(
            toFile: dir + "/bad.txt", atomically: true, encoding: .utf8)
        let bad = try await Child.start(["-i", dir + "/bad.txt"], logs: dir + "/bad")
        #expect(try await bad.wait() == 64)
        #expect(bad.errors == "rangefetch: \(dir)/bad.txt:3: unsupported option 'size' (out= and checksum= are)\n")

        let missing = try await Child.start(["-i", dir + "/missing.txt"], logs: dir + "/missing")
        #expect(try await missing.wait() == 64)
        #expect(missing.errors.split(separator: "\n").count == 1 && missing.errors.contains("missing.txt"))

        let listed = String(repeating: "a", count: 64)
        let other = String(repeating: "b", count: 64)
        try "http://127.0.0.1:1/dir/a.bin\n  checksum=sha-256=\(listed)\n".write(
            toFile: dir + "/list.txt", atomically: true, encoding: .utf8)
        try "\(other)  a.bin\n".write(toFile: dir + "/sums", atomically: true, encoding: .utf8)
        let twice = try await Child.start(
            ["-i", dir + "/list.txt", "--checksums", dir + "/sums"], logs: dir + "/twice")
        #expect(try await twice.wait() == 64)
        #expect(twice.errors.split(separator: "\n").count == 1)
        #expect(twice.errors.contains("http://127.0.0.1:1/dir/a.bin") && twice.errors.contains("list.txt:1"))
        let sha = try await Child.start(["-i", dir + "/list.txt", "--sha256", other], logs: dir + "/sha")
        #expect(try await sha.wait() == 64)
        #expect(sha.errors.contains("http://127.0.0.1:1/dir/a.bin") && sha.errors.contains("--sha256"))
        let noDigest = try await Child.start(["-i", dir + "/list.txt", "--no-digest"], logs: dir + "/no-digest")
        #expect(try await noDigest.wait() == 64)
        #expect(noDigest.errors.contains("checksum="))
        // The same digest in both places agrees: no usage error (the URL itself fails to connect: exit 4).
        try "\(listed)  a.bin\n".write(toFile: dir + "/same", atomically: true, encoding: .utf8)
        let agree = try await Child.start(
            ["-i", dir + "/list.txt", "--checksums", dir + "/same", "--retries", "0", "-o", dir + "/o/"],
            logs: dir + "/agree")
        #expect(try await agree.wait() != 64, "\(agree.errors)")
    }
}
