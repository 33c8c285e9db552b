import Crypto
import Foundation
import RangeServer

/// The bytes a resource should have, so the harness can tell which version an output holds.
package enum ReferenceContent: Hashable, Sendable {
    /// `/bytes/{length}?seed=S`: generated, any version.
    case generated(length: UInt64, seed: UInt64)
    /// `/files/...`: a file under the served root; it has one version.
    case file(path: String, length: UInt64)

    /// The full length.
    public var length: UInt64 {
        switch self {
        case .generated(let length, _), .file(_, let length): length
        }
    }

    /// The same content at another length: a generated resource shrunk or grown by a scenario step's `size` (its
    /// bytes at each offset are unchanged); a file keeps its own (the loader refuses `size` on one).
    ///
    /// - Parameters:
    ///   - length: the new length.
    /// - Returns: the content at that length.
    public func resized(to length: UInt64) -> ReferenceContent {
        switch self {
        case .generated(_, let seed): .generated(length: length, seed: seed)
        case .file: self
        }
    }

    /// Reads a resource path the way the server does.
    ///
    /// - Parameters:
    ///   - resource: e.g. `/bytes/4M?seed=10` or `/files/sample.bin`.
    ///   - root: the directory served under `/files/`.
    /// - Returns: the reference content and the version the path names (1 unless `version=` is given).
    /// - Throws: `ConformanceError.invalidExpectation` for a path the harness cannot reproduce.
    public static func parse(_ resource: String, root: String) throws(ConformanceError) -> (ReferenceContent, Int) {
        let parts = resource.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        var seed: UInt64 = 0
        var version = 1
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard item.count == 2 else { continue }
                if item[0] == "seed", let value = UInt64(item[1]) { seed = value }
                if item[0] == "version", let value = Int(item[1]) { version = value }
            }
        }
        if path.hasPrefix("/bytes/"), let length = ByteSize.parse(String(path.dropFirst(7))) {
            return (.generated(length: length, seed: seed), version)
        }
        if path.hasPrefix("/files/") {
            let file = root + "/" + path.dropFirst(7)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                let size = attributes[.size] as? NSNumber
            else { throw .invalidExpectation("resource \(resource): \(file) does not exist") }
            return (.file(path: file, length: size.uint64Value), 1)
        }
        throw .invalidExpectation("resource \(resource): only /bytes/ and /files/ resources can be judged")
    }

    /// Fills `buffer` with version `version`'s bytes at `offset` (the file ignores the version).
    func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: UInt64, version: Int, file: FileHandle?) {
        switch self {
        case .generated(_, let seed):
            ContentGenerator(seed: seed, version: UInt64(version)).fill(buffer, offset: offset)
        case .file:
            guard let file else { return }
            try? file.seek(toOffset: offset)
            let data = (try? file.read(upToCount: buffer.count)) ?? Data()
            data.withUnsafeBytes { source in buffer.copyMemory(from: source) }
        }
    }

    /// Calls `body` with each block of version `version`'s bytes in order, `size` bytes each (the last may be
    /// shorter), up to `limit` bytes.
    ///
    /// - Parameters:
    ///   - version: the version (ignored by a file).
    ///   - size: the block size.
    ///   - limit: where to stop; nil: at the end.
    ///   - body: given each block; the buffer is reused, so it must not escape.
    func forEachBlock(
        version: Int, size: Int, upTo limit: UInt64? = nil, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        let end = min(limit ?? length, length)
        let file: FileHandle? = if case .file(let path, _) = self { FileHandle(forReadingAtPath: path) } else { nil }
        defer { try? file?.close() }
        var buffer = [UInt8](repeating: 0, count: size)
        var offset: UInt64 = 0
        while offset < end {
            let count = Int(min(UInt64(size), end - offset))
            try buffer.withUnsafeMutableBytes { raw in
                let block = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                fill(block, offset: offset, version: version, file: file)
                try body(UnsafeRawBufferPointer(block))
            }
            offset += UInt64(count)
        }
    }

    /// The SHA-256 (lower-case hex) of version `version`'s bytes: what a complete output must hash to.
    ///
    /// - Parameters:
    ///   - version: the version (ignored by a file).
    /// - Returns: the digest.
    func sha256(version: Int) -> String {
        var hasher = SHA256()
        forEachBlock(version: version, size: OutputInspector.blockSize) { hasher.update(bufferPointer: $0) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
