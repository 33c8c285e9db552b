import Crypto
import Foundation
import NIOCore
import Testing

@testable import DownloadEngine

@Suite("Hash pipeline")
struct HashPipelineTests {
    private func parts(_ bytes: [UInt8], size: Int) -> [ByteBuffer] {
        stride(from: 0, to: bytes.count, by: size).map { ByteBuffer(bytes: bytes[$0..<min($0 + size, bytes.count)]) }
    }

    private func hex(_ hasher: SHA256) -> String { HeaderValues.hex(hasher.finalize()) }

    /// A short body is hashed on the caller's thread, a long one (or one of unknown length) on the hash thread;
    /// either way the digest is the body's.
    @Test(arguments: [Int64(256 << 10), HashPipeline.inlineLimit, HashPipeline.inlineLimit + 1, nil])
    func digestIsTheBodysInBothModes(expected: Int64?) async throws {
        let count = Int(min(expected ?? (3 << 20), 3 << 20))
        let body = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let pipeline = HashPipeline(SHA256(), expectedBytes: expected)
        #expect(pipeline.hashesInline == (expected.map { $0 <= HashPipeline.inlineLimit } ?? false))
        for part in parts(body, size: 16_384 + 3) { pipeline.submit(part) }
        #expect(hex(try await pipeline.result()) == HeaderValues.hex(SHA256.hash(data: body)))
    }

    /// With a kept prefix to read back first, the pipeline never hashes inline: the prefix is hashed on the hash
    /// thread while the request for the rest is on its way, and the new parts must come after it.
    @Test func keptPrefixIsHashedFirstAndNeverInline() async throws {
        let directory = makeTemporaryDirectory()
        let path = directory + "/prefix.part"
        let prefix = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let rest = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 1) }
        try Data(prefix).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let pipeline = HashPipeline(SHA256(), prefix: (fd, path, Int64(prefix.count)), expectedBytes: 50_000)
        #expect(!pipeline.hashesInline)
        for part in parts(rest, size: 8_192) { pipeline.submit(part) }
        #expect(hex(try await pipeline.result()) == HeaderValues.hex(SHA256.hash(data: prefix + rest)))
    }
}
