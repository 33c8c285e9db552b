import Crypto
import Foundation

/// Reads an output file after a run: its size, which versions its bytes match, and optionally its digest.
enum OutputInspector {
    static let blockSize = 1 << 16

    static func inspect(
        path: String, reference: ReferenceContent, versions: [Int], expectedVersion: Int, computeDigest: Bool
    ) -> OutputFacts {
        let name = (path as NSString).lastPathComponent
        guard let handle = FileHandle(forReadingAtPath: path) else { return .missing(name) }
        defer { try? handle.close() }
        let referenceFile: FileHandle? =
            if case .file(let referencePath, _) = reference { FileHandle(forReadingAtPath: referencePath) } else { nil }
        defer { try? referenceFile?.close() }
        // The expected version first, so a block both versions share is credited to it.
        let candidates = [expectedVersion] + versions.filter { $0 != expectedVersion }
        var hasher = SHA256()
        var segments: [ContentSegment] = []
        var offset: UInt64 = 0
        var expectedBuffer = [UInt8](repeating: 0, count: blockSize)
        while true {
            guard let data = try? handle.read(upToCount: blockSize), !data.isEmpty else { break }
            if computeDigest { hasher.update(data: data) }
            var matched: Int?
            let available = offset < reference.length ? Int(min(UInt64(data.count), reference.length - offset)) : 0
            if available == data.count {
                for version in candidates {
                    expectedBuffer.withUnsafeMutableBytes { buffer in
                        reference.fill(
                            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<available]), offset: offset,
                            version: version, file: referenceFile)
                    }
                    let same = data.withUnsafeBytes { actual in
                        expectedBuffer.withUnsafeBytes { expected in
                            memcmp(actual.baseAddress!, expected.baseAddress!, available) == 0
                        }
                    }
                    if same {
                        matched = version
                        break
                    }
                }
            }
            ContentSegment.append(offset..<(offset + UInt64(data.count)), version: matched, to: &segments)
            offset += UInt64(data.count)
        }
        let digest = computeDigest ? hasher.finalize().map { String(format: "%02x", $0) }.joined() : nil
        return OutputFacts(name: name, exists: true, size: offset, sha256: digest, segments: segments)
    }

    /// The bytes under a directory tree (regular files), for step thresholds.
    ///
    /// A file counts with the blocks it has, not its length: a segmented client (`rangefetch -x`, aria2c) may set
    /// its file to the full length before any byte arrives, and the holes of such a sparse file are not on disk.
    static func bytesOnDisk(under directories: [String]) -> UInt64 {
        var total: UInt64 = 0
        for directory in directories {
            guard let enumerator = FileManager.default.enumerator(atPath: directory) else { continue }
            while let relative = enumerator.nextObject() as? String {
                guard enumerator.fileAttributes?[.type] as? FileAttributeType == .typeRegular else { continue }
                var status = stat()
                guard stat(directory + "/" + relative, &status) == 0 else { continue }
                total += UInt64(max(0, min(Int64(status.st_size), Int64(status.st_blocks) * 512)))
            }
        }
        return total
    }
}
