import Crypto
import Foundation

/// What the protocol asks about an output file: its size, its SHA-256, and the SHA-256 of each 64 KiB block, so the
/// server can say where the bytes went wrong. (On Apple's systems `import CryptoKit` offers the same `SHA256`.)
enum OutputDescription {
    /// The block size the protocol hashes by.
    static let blockSize = 64 * 1024

    /// The description of the file at `path`; `exists: false` when there is none.
    static func describe(route: String, path: String) -> RunResult.Output {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return RunResult.Output(route: route, exists: false)
        }
        defer { try? handle.close() }
        var whole = SHA256()
        var blocks: [String] = []
        var size: Int64 = 0
        // Bounded by the file's length: each pass reads one block, and an empty read ends it.
        while let block = try? handle.read(upToCount: blockSize), !block.isEmpty {
            whole.update(data: block)
            blocks.append(hex(SHA256.hash(data: block)))
            size += Int64(block.count)
        }
        return RunResult.Output(route: route, size: size, sha256: hex(whole.finalize()), blocks: blocks)
    }

    private static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
