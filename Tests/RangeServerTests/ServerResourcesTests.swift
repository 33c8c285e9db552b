import AsyncHTTPClient
import Crypto
import Foundation
import RangeServer
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private let tebibyte: UInt64 = 1 << 40

/// A fresh directory under the system temporary directory, removed by the caller.
private func makeTemporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "server-resources-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Sets a file's access and modification times to `seconds` since 1970.
private func setModificationTime(_ path: String, seconds: Int) {
    var times = [timeval(tv_sec: seconds, tv_usec: 0), timeval(tv_sec: seconds, tv_usec: 0)]
    _ = utimes(path, &times)
}

private func sha256Base64(_ bytes: [UInt8]) -> String {
    Data(SHA256.hash(data: bytes)).base64EncodedString()
}

@Suite("Server over the wire: /bytes, /files, digests, large bodies")
struct ServerResourcesTests {
    // MARK: - /bytes

    @Test(
        "/bytes sizes are decimal with 1024-based K, M, G, T suffixes, up to and past 1 TiB",
        arguments: [
            ("0", 0), ("1", 1), ("1536", 1536), ("1K", 1024), ("3M", 3 << 20), ("1G", 1 << 30), ("5G", 5 << 30),
            ("1T", tebibyte), ("4T", 4 * tebibyte),
        ] as [(String, UInt64)]
    )
    func sizes(text: String, expected: UInt64) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try rawRequest(port: server.port, "HEAD", "/bytes/\(text)")
            #expect(response.status == 200)
            #expect(response.header("content-length") == String(expected))
        }
    }

    @Test("a whole /bytes body equals the reference for the default and for a given seed and version")
    func wholeBody() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let plain = try rawRequest(port: server.port, "GET", "/bytes/100K")
            #expect(plain.status == 200)
            #expect(plain.body == WireCheck.reference(seed: 0, version: 1, offset: 0, count: 102_400))
            let explicit = try rawRequest(port: server.port, "GET", "/bytes/100K?seed=0&version=1")
            #expect(explicit.body == plain.body)
            let seeded = try rawRequest(port: server.port, "GET", "/bytes/77777?seed=42&version=7")
            #expect(seeded.body == WireCheck.reference(seed: 42, version: 7, offset: 0, count: 77_777))
            #expect(seeded.header("content-type") == "application/octet-stream")
        }
    }

    @Test("ranges anywhere in /bytes match the reference, whatever their alignment")
    func rangesMatchReference() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let length: UInt64 = 10 << 20
            let ranges: [ClosedRange<UInt64>] = [
                0...0, 1...7, 3...12, 8...15, 1023...4097, 777_777...888_887, length - 9...length - 1,
                5_000_001...5_000_001,
            ]
            for range in ranges {
                let response = try rawRequest(
                    port: server.port, "GET", "/bytes/10M?seed=11&version=4",
                    headers: ["Range": "bytes=\(range.lowerBound)-\(range.upperBound)"]
                )
                #expect(response.status == 206)
                #expect(response.header("content-range") == "bytes \(range.lowerBound)-\(range.upperBound)/\(length)")
                let count = Int(range.upperBound - range.lowerBound + 1)
                #expect(
                    response.body == WireCheck.reference(seed: 11, version: 4, offset: range.lowerBound, count: count))
            }
        }
    }

    @Test("two versions, and two seeds, of the same size differ")
    func versionsDiffer() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let one = try rawRequest(port: server.port, "GET", "/bytes/4K?version=1").body
            let two = try rawRequest(port: server.port, "GET", "/bytes/4K?version=2").body
            let seeded = try rawRequest(port: server.port, "GET", "/bytes/4K?seed=1").body
            #expect(one.count == 4096 && two.count == 4096 && seeded.count == 4096)
            #expect(one != two)
            #expect(one != seeded)
            #expect(two == WireCheck.reference(version: 2, offset: 0, count: 4096))
            // "Differ" should mean nearly everywhere, not one byte.
            #expect(zip(one, two).filter { $0 == $1 }.count < 64)
        }
    }

    @Test("the /bytes ETag is strong and quoted, stable, and changes with size, seed and version")
    func bytesETag() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            func tag(_ target: String) throws -> String {
                let response = try rawRequest(port: server.port, "HEAD", target)
                return try #require(response.header("etag"))
            }
            let base = try tag("/bytes/1M?seed=3&version=2")
            #expect(base.hasPrefix("\"") && base.hasSuffix("\"") && base.count > 2)
            #expect(!base.hasPrefix("W/"))
            #expect(try tag("/bytes/1M?seed=3&version=2") == base)
            #expect(try tag("/bytes/1024K?version=2&seed=3") == base)
            let others = try ["/bytes/2M?seed=3&version=2", "/bytes/1M?seed=4&version=2", "/bytes/1M?seed=3&version=3"]
                .map(tag)
            for other in others { #expect(other != base) }
            #expect(Set(others).count == 3)
        }
    }

    @Test("/bytes Last-Modified is fixed per (seed, version), equal across restarts, and over a minute old")
    func bytesLastModified() async throws {
        let targets = ["/bytes/1K", "/bytes/1K?seed=5&version=9", "/bytes/1T?seed=123456&version=31"]
        func lastModified(_ target: String, port: Int) throws -> String {
            try #require(rawRequest(port: port, "HEAD", target).header("last-modified"))
        }
        let first = try await withRangeServer(Fixtures.configuration()) { server in
            try targets.map { try lastModified($0, port: server.port) }
        }
        let second = try await withRangeServer(Fixtures.configuration()) { server in
            let again = try targets.map { try lastModified($0, port: server.port) }
            // Another size with the same seed and version keeps the date.
            #expect(try lastModified("/bytes/7M?seed=5&version=9", port: server.port) == again[1])
            return again
        }
        #expect(first == second)
        for value in first {
            let seconds = try #require(WireCheck.seconds(fromHTTPDate: value), "Last-Modified '\(value)'")
            #expect(seconds < Int(time(nil)) - 60)
        }
    }

    @Test("a 1 TiB resource serves ranges past 2^32 that match the reference")
    func tebibyteRanges() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let middle = try rawRequest(
                port: server.port, "GET", "/bytes/1T", headers: ["Range": "bytes=5000000000-5000000099"])
            #expect(middle.status == 206)
            #expect(middle.header("content-range") == "bytes 5000000000-5000000099/\(tebibyte)")
            #expect(middle.header("content-length") == "100")
            #expect(middle.body == WireCheck.reference(offset: 5_000_000_000, count: 100))

            let tail = try rawRequest(port: server.port, "GET", "/bytes/1T?seed=2", headers: ["Range": "bytes=-100"])
            #expect(tail.status == 206)
            #expect(tail.header("content-range") == "bytes \(tebibyte - 100)-\(tebibyte - 1)/\(tebibyte)")
            #expect(tail.body == WireCheck.reference(seed: 2, offset: tebibyte - 100, count: 100))

            let open = try rawRequest(
                port: server.port, "GET", "/bytes/1T", headers: ["Range": "bytes=\(tebibyte - 5)-"])
            #expect(open.status == 206)
            #expect(open.body == WireCheck.reference(offset: tebibyte - 5, count: 5))
        }
    }

    // MARK: - /files

    @Test("fixture files are served byte for byte", arguments: ["hello.txt", "sample.bin", "docs/info.json"])
    func fileContent(path: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let expected = try #require(FileManager.default.contents(atPath: Fixtures.files + "/" + path))
            let response = try rawRequest(port: server.port, "GET", "/files/\(path)")
            #expect(response.status == 200)
            #expect(response.body == Array(expected))
            #expect(response.header("content-length") == String(expected.count))
            let tag = try #require(response.header("etag"))
            #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && !tag.hasPrefix("W/"))
            let head = try rawRequest(port: server.port, "HEAD", "/files/\(path)")
            #expect(head.status == 200)
            #expect(head.header("etag") == tag)
        }
    }

    @Test("a file's ETag follows size and mtime, and Last-Modified is its mtime")
    func fileValidators() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/data.bin"
        try Data(repeating: 0x41, count: 1000).write(to: URL(fileURLWithPath: path))
        setModificationTime(path, seconds: 1_700_000_000)

        try await withRangeServer(Fixtures.configuration { $0.root = root }) { server in
            func head() throws -> RawHTTPConnection.Response {
                try rawRequest(port: server.port, "HEAD", "/files/data.bin")
            }
            let original = try head()
            #expect(original.status == 200)
            #expect(original.header("last-modified") == "Tue, 14 Nov 2023 22:13:20 GMT")
            #expect(original.header("last-modified") == WireCheck.httpDate(seconds: 1_700_000_000))
            let tag = try #require(original.header("etag"))
            #expect(tag.hasPrefix("\"") && !tag.hasPrefix("W/"))
            #expect(try head().header("etag") == tag)

            // Same size, new mtime.
            setModificationTime(path, seconds: 1_700_000_100)
            let touched = try head()
            #expect(touched.header("etag") != tag)
            #expect(touched.header("last-modified") == WireCheck.httpDate(seconds: 1_700_000_100))

            // New size, the original mtime again.
            try Data(repeating: 0x42, count: 1001).write(to: URL(fileURLWithPath: path))
            setModificationTime(path, seconds: 1_700_000_000)
            let resized = try rawRequest(port: server.port, "GET", "/files/data.bin")
            #expect(resized.header("etag") != tag)
            #expect(resized.header("etag") != touched.header("etag"))
            #expect(resized.body == [UInt8](repeating: 0x42, count: 1001))
            #expect(resized.header("last-modified") == "Tue, 14 Nov 2023 22:13:20 GMT")
        }
    }

    @Test("a file replaced, rewritten in place or deleted between two requests is noticed at once")
    func fileChangesBetweenRequests() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/data.bin"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        setModificationTime(path, seconds: 1_700_000_000)

        try await withRangeServer(Fixtures.configuration { $0.root = root }) { server in
            // Twice, so the second answer comes from whatever the server kept of the first.
            let first = try rawRequest(port: server.port, "GET", "/files/data.bin", headers: ["Range": "bytes=0-99"])
            let again = try rawRequest(port: server.port, "GET", "/files/data.bin", headers: ["Range": "bytes=0-99"])
            let tag = try #require(first.header("etag"))
            #expect(again.header("etag") == tag)
            #expect(again.body == [UInt8](repeating: 0x41, count: 100))

            // Replaced by rename: a new inode with the same size and the same mtime.
            let replacement = root + "/data.tmp"
            try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: replacement))
            setModificationTime(replacement, seconds: 1_700_000_000)
            #expect(rename(replacement, path) == 0)
            let replaced = try rawRequest(
                port: server.port, "GET", "/files/data.bin", headers: ["Range": "bytes=0-99"])
            #expect(replaced.status == 206)
            #expect(replaced.body == [UInt8](repeating: 0x42, count: 100))
            let large = try rawRequest(port: server.port, "GET", "/files/data.bin")
            #expect(large.body == [UInt8](repeating: 0x42, count: 4096))

            // Rewritten in place to a new size: a new ETag and the new bytes, small range and whole body alike.
            try Data(repeating: 0x43, count: 100_000).write(to: URL(fileURLWithPath: path))
            setModificationTime(path, seconds: 1_700_000_200)
            let rewritten = try rawRequest(port: server.port, "GET", "/files/data.bin")
            #expect(rewritten.header("etag") != tag)
            #expect(rewritten.header("etag") != replaced.header("etag"))
            #expect(rewritten.body == [UInt8](repeating: 0x43, count: 100_000))
            let conditional = try rawRequest(
                port: server.port, "GET", "/files/data.bin", headers: ["If-None-Match": tag])
            #expect(conditional.status == 200, "the old ETag must not match the rewritten file")

            // Deleted: 404, not the bytes the server saw last time.
            #expect(unlink(path) == 0)
            let deleted = try rawRequest(port: server.port, "GET", "/files/data.bin", headers: ["Range": "bytes=0-9"])
            #expect(deleted.status == 404)

            // Replaced by a symlink that leaves the root: refused, though the path was served before.
            let outside = root + "-outside"
            try Data("OUTSIDE".utf8).write(to: URL(fileURLWithPath: outside))
            defer { unlink(outside) }
            #expect(symlink(outside, path) == 0)
            let escaped = try rawRequest(port: server.port, "GET", "/files/data.bin")
            #expect(escaped.status == 404)
            #expect(!String(decoding: escaped.body, as: UTF8.self).contains("OUTSIDE"))
        }
    }

    @Test("a file moved away, a directory on its way moved or replaced, or a rewrite is noticed, cached or not")
    func pathChangesBetweenRequests() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/a/b"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/data.bin"
        /// Writes `byte` × 4096 at `path`, with one modification time, so only the inode tells versions apart.
        func write(_ byte: UInt8, at path: String) throws {
            try Data(repeating: byte, count: 4096).write(to: URL(fileURLWithPath: path))
            setModificationTime(path, seconds: 1_700_000_000)
        }
        try write(0x41, at: path)

        try await withRangeServer(Fixtures.configuration { $0.root = root }) { server in
            /// Two requests: the first after the change, the second served from what the first left cached.
            func twice(_ expected: UInt8?, _ step: String) throws {
                for round in 1...2 {
                    let answer = try rawRequest(
                        port: server.port, "GET", "/files/a/b/data.bin", headers: ["Range": "bytes=0-99"])
                    if let expected {
                        #expect(answer.status == 206, "\(step), request \(round)")
                        #expect(answer.body == [UInt8](repeating: expected, count: 100), "\(step), request \(round)")
                    } else {
                        #expect(answer.status == 404, "\(step), request \(round)")
                    }
                }
            }
            try twice(0x41, "first")

            // Moved away, so the old inode keeps its one link, and another file of the same size and time put in.
            #expect(rename(path, root + "/moved.bin") == 0)
            try twice(nil, "moved away")
            try write(0x42, at: path)
            try twice(0x42, "another file put in its place")

            // A directory on the way moved away and another made in its place.
            #expect(rename(root + "/a", root + "/a-old") == 0)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try write(0x43, at: path)
            try twice(0x43, "a directory on the way replaced")

            // The last directory moved away alone.
            #expect(rename(directory, root + "/b-old") == 0)
            try twice(nil, "the file's directory moved away")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try write(0x44, at: path)
            try twice(0x44, "the directory made again")

            // Rewritten in place with the same size, then given a new modification time: the ETag follows it.
            let before = try rawRequest(port: server.port, "GET", "/files/a/b/data.bin").header("etag")
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.write(contentsOf: Data(repeating: 0x45, count: 4096))
            try handle.close()
            setModificationTime(path, seconds: 1_700_000_300)
            try twice(0x45, "rewritten in place and touched")
            #expect(try rawRequest(port: server.port, "GET", "/files/a/b/data.bin").header("etag") != before)
        }
    }

    @Test("two files whose names differ only in Unicode normalisation are two files, on one connection too")
    func namesThatDifferOnlyInNormalisation() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // "café" precomposed (NFC) and decomposed (NFD): equal as Swift Strings, different names on disk.
        let composed = "caf\u{e9}.txt"
        let decomposed = "cafe\u{301}.txt"
        try Data("composed\n".utf8).write(to: URL(fileURLWithPath: root + "/" + composed))
        try Data("decomposed\n".utf8).write(to: URL(fileURLWithPath: root + "/" + decomposed))

        try await withRangeServer(Fixtures.configuration { $0.root = root }) { server in
            // One connection, so every request lands on the same pool thread and the same file-cache shard.
            let connection = try RawHTTPConnection(port: server.port)
            for (name, expected) in [
                (composed, "composed\n"), (decomposed, "decomposed\n"), (composed, "composed\n"),
                (decomposed, "decomposed\n"),
            ] {
                try connection.request("GET", "/files/" + name)
                let response = try connection.readResponse()
                #expect(response.status == 200, "\(Array(name.utf8))")
                #expect(String(decoding: response.body, as: UTF8.self) == expected, "\(Array(name.utf8))")
            }
            // Percent-encoded, as most clients send them.
            let encoded = try rawRequest(port: server.port, "GET", "/files/cafe%CC%81.txt")
            #expect(String(decoding: encoded.body, as: UTF8.self) == "decomposed\n")
        }
    }

    @Test(
        "small file bodies on one keep-alive connection carry exactly the fields and bytes a fresh connection gets",
        .timeLimit(.minutes(1)))
    func smallBodiesOnOneConnection() async throws {
        let root = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = (0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        try Data(data).write(to: URL(fileURLWithPath: root + "/data.bin"))
        let text = Array("seventy-nine bytes of text, the same length as one of the ranges asked below...".utf8)
        try Data(text).write(to: URL(fileURLWithPath: root + "/note.txt"))
        setModificationTime(root + "/data.bin", seconds: 1_700_000_000)

        try await withRangeServer(Fixtures.configuration { $0.root = root }) { server in
            // The daemon keeps each connection's last small-body response and changes only the fields that differ
            // for the next one; every answer must still be what a response built afresh would be.
            let connection = try RawHTTPConnection(port: server.port)
            func check(
                _ method: String, _ target: String, _ headers: [String: String], status: Int, body: [UInt8],
                _ label: String
            ) throws {
                let before = Int(Date().timeIntervalSince1970)
                try connection.request(method, target, headers: headers)
                let kept = try connection.readResponse(isHead: method == "HEAD")
                // Fresh, and kept alive too: `Connection: close` would add a field.
                let other = try RawHTTPConnection(port: server.port)
                try other.request(method, target, headers: headers)
                let fresh = try other.readResponse(isHead: method == "HEAD")
                let after = Int(Date().timeIntervalSince1970)
                #expect(kept.status == status, "\(label)")
                #expect(kept.body == body, "\(label)")
                let keptFields = kept.headers.filter { $0.name.lowercased() != "date" }
                let freshFields = fresh.headers.filter { $0.name.lowercased() != "date" }
                #expect(
                    keptFields.map { "\($0.name): \($0.value)" } == freshFields.map { "\($0.name): \($0.value)" },
                    "\(label)")
                #expect(kept.headers.filter { $0.name.lowercased() == "date" }.count == 1, "\(label)")
                let date = try #require(WireCheck.seconds(fromHTTPDate: kept.header("date") ?? ""), "\(label)")
                #expect(date >= before && date <= after, "\(label)")
            }
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=0-78"], status: 206, body: Array(data[0...78]), "first")
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=100-178"], status: 206, body: Array(data[100...178]),
                "same length, another range")
            try check("GET", "/files/note.txt", [:], status: 200, body: text, "same length, another file, a 200")
            // HEAD has no range handling (RFC 9110 §14.2): the headers of a full 200, and no body.
            try check("HEAD", "/files/data.bin", ["Range": "bytes=0-78"], status: 200, body: [], "HEAD between")
            let tag = try #require(try rawRequest(port: server.port, "GET", "/files/data.bin").header("etag"))
            try check("GET", "/files/data.bin", ["If-None-Match": tag], status: 304, body: [], "304 between")
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=8000-8078"], status: 206, body: Array(data[8000...8078]),
                "after bodiless answers")
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=0-4095"], status: 206, body: Array(data[0...4095]),
                "a longer body")

            // The same length again once the wall clock has passed a second: a new Date, the rest unchanged.
            let wait = Double(Int(Date().timeIntervalSince1970) + 1) - Date().timeIntervalSince1970
            try await Task.sleep(for: .milliseconds(max(0, Int(wait * 1000)) + 50))
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=10-4105"], status: 206, body: Array(data[10...4105]),
                "a new second")

            // Rewritten in place with the same size: a new ETag and Last-Modified on the next response.
            let rewritten = data.map { $0 ^ 0xFF }
            try Data(rewritten).write(to: URL(fileURLWithPath: root + "/data.bin"))
            setModificationTime(root + "/data.bin", seconds: 1_700_000_500)
            try check(
                "GET", "/files/data.bin", ["Range": "bytes=10-4105"], status: 206, body: Array(rewritten[10...4105]),
                "the file rewritten")
        }
    }

    // MARK: - Digests

    @Test("Want-Repr-Digest: sha-256=1 gives Repr-Digest of the whole file, on 200 and 206")
    func fileDigest() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            for path in ["hello.txt", "sample.bin"] {
                let bytes = Array(try #require(FileManager.default.contents(atPath: Fixtures.files + "/" + path)))
                let expected = "sha-256=:\(sha256Base64(bytes)):"
                let full = try rawRequest(
                    port: server.port, "GET", "/files/\(path)", headers: ["Want-Repr-Digest": "sha-256=1"])
                #expect(full.header("repr-digest") == expected)
                let partial = try rawRequest(
                    port: server.port, "GET", "/files/\(path)",
                    headers: ["Want-Repr-Digest": "sha-256=1", "Range": "bytes=0-3"]
                )
                #expect(partial.status == 206)
                #expect(partial.header("repr-digest") == expected)
                let head = try rawRequest(
                    port: server.port, "HEAD", "/files/\(path)", headers: ["Want-Repr-Digest": "sha-256=1"])
                #expect(head.header("repr-digest") == expected)
            }
        }
    }

    @Test("Want-Repr-Digest: sha-256=1 gives Repr-Digest of the whole /bytes representation")
    func bytesDigest() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let reference = WireCheck.reference(seed: 3, version: 2, offset: 0, count: 300_000)
            let expected = "sha-256=:\(sha256Base64(reference)):"
            let full = try rawRequest(
                port: server.port, "GET", "/bytes/300000?seed=3&version=2", headers: ["Want-Repr-Digest": "sha-256=1"]
            )
            #expect(full.header("repr-digest") == expected)
            let partial = try rawRequest(
                port: server.port, "GET", "/bytes/300000?seed=3&version=2",
                headers: ["Want-Repr-Digest": "sha-256=1", "Range": "bytes=100-199"]
            )
            #expect(partial.status == 206)
            #expect(partial.header("repr-digest") == expected)
            let other = try rawRequest(
                port: server.port, "GET", "/bytes/300000?seed=3&version=3", headers: ["Want-Repr-Digest": "sha-256=1"]
            )
            #expect(other.header("repr-digest") != nil)
            #expect(other.header("repr-digest") != expected)
        }
    }

    @Test(
        "no Repr-Digest unless sha-256 is wanted with a non-zero preference",
        arguments: [nil, "sha-256=0", "sha-512=1", "unixsum=3"] as [String?]
    )
    func noDigestUnlessAsked(want: String?) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let headers = want.map { ["Want-Repr-Digest": $0] } ?? [:]
            for target in ["/files/hello.txt", "/bytes/10K"] {
                let response = try rawRequest(port: server.port, "GET", target, headers: headers)
                #expect(response.status == 200)
                #expect(response.header("repr-digest") == nil, "\(target) with \(want ?? "nothing")")
            }
        }
    }

    // MARK: - Large bodies

    @Test("GET /bytes/64M streamed through AsyncHTTPClient hashes to the reference")
    func largeBody() async throws {
        let length = 64 << 20
        var reference = SHA256()
        let generator = ContentGenerator(seed: 0, version: 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        for offset in stride(from: 0, to: length, by: chunk.count) {
            chunk.withUnsafeMutableBytes { generator.fill($0, offset: UInt64(offset)) }
            reference.update(data: chunk)
        }
        let expected = Array(reference.finalize())

        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await withRangeServer(Fixtures.configuration()) { server in
                let response = try await client.execute(
                    HTTPClientRequest(url: server.baseURL + "/bytes/64M"), timeout: .init(scaled(.seconds(60))))
                #expect(response.status.code == 200)
                #expect(response.headers.first(name: "content-length") == String(length))
                var hasher = SHA256()
                var received = 0
                for try await buffer in response.body {
                    received += buffer.readableBytes
                    buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                }
                #expect(received == length)
                #expect(Array(hasher.finalize()) == expected)
            }
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
