import Crypto
import Foundation
import NIOConcurrencyHelpers

/// Turns the outputs a remote client reports (size, SHA-256, a SHA-256 per 64 KiB block) into the facts the judge
/// reads, by comparing them with the digests of the reference content's blocks.
///
/// The client sends digests, not bytes, so the judge can still name a splice to the block: block i is credited to
/// the first version (the expected one first) whose block i has the same digest.
final class ReportedOutputs: Sendable {
    /// The block digests of each (scenario, version), computed on first use: a resource is hashed once per version
    /// however many runs report on it.
    private let cache = NIOLockedValueBox<[String: (blocks: [String], whole: String)]>([:])

    /// The facts of one reported output.
    ///
    /// - Parameters:
    ///   - output: what the client reported.
    ///   - entry: the scenario.
    /// - Returns: the facts.
    /// - Throws: `ConformanceError.invalidReport` when the report gives no digests, `conflict` when its block count
    ///   does not fit its size.
    func facts(
        of output: ConformanceAPI.ReportedOutput, entry: CatalogueEntry
    ) throws(ConformanceError)
        -> OutputFacts
    {
        let name = output.route.isEmpty ? entry.name : output.route
        if output.exists == false { return .missing(name) }
        guard let size = output.size else { throw .invalidReport("output '\(output.route)': size is missing") }
        let blockSize = UInt64(OutputInspector.blockSize)
        let candidates = [entry.expectedVersion] + entry.versions.filter { $0 != entry.expectedVersion }
        if let blocks = output.blocks {
            try Self.checkBlockCount(of: output)
            var segments: [ContentSegment] = []
            let references = candidates.map {
                (version: $0, blocks: blockDigests(entry, version: $0), length: entry.length(ofVersion: $0))
            }
            for (index, digest) in blocks.enumerated() {
                let lower = UInt64(index) * blockSize
                let range = lower..<min(size, lower + blockSize)
                // A block is judged only where the reference has a whole block of that length (a short last block
                // of a longer output matches nothing).
                let matched = references.first { reference in
                    index < reference.blocks.count && range.upperBound <= reference.length
                        && (range.count == Int(blockSize) || range.upperBound == reference.length)
                        && reference.blocks[index] == digest.lowercased()
                }
                ContentSegment.append(range, version: matched?.version, to: &segments)
            }
            return OutputFacts(
                name: name, exists: true, size: size, sha256: output.sha256?.lowercased(), segments: segments)
        }
        guard let sha256 = output.sha256?.lowercased() else {
            throw .invalidReport("output '\(output.route)': give blocks (a SHA-256 per 64 KiB block) or sha256")
        }
        // Without blocks: the whole file is one version or none.
        let version = candidates.first {
            size == entry.length(ofVersion: $0) && fullDigest(entry, version: $0) == sha256
        }
        let segments = size == 0 ? [] : [ContentSegment(range: 0..<size, version: version)]
        return OutputFacts(name: name, exists: true, size: size, sha256: sha256, segments: segments)
    }

    /// Refuses a `blocks` list that is not one digest per 64 KiB block of `size`, for an output that exists.
    ///
    /// - Throws: `ConformanceError.conflict` naming the output (a rule between members no schema states; see
    ///   `ConformanceService.checkFit(of:)`).
    static func checkBlockCount(of output: ConformanceAPI.ReportedOutput) throws(ConformanceError) {
        // An output that does not exist is judged by that alone; the members it gave beside are not read.
        guard output.exists != false, let blocks = output.blocks, let size = output.size else { return }
        let blockSize = UInt64(OutputInspector.blockSize)
        let expected = (size + blockSize - 1) / blockSize
        guard UInt64(blocks.count) == expected else {
            throw .conflict(
                "output '\(output.route)': \(blocks.count) blocks for \(size) bytes, expected \(expected) "
                    + "(one SHA-256 per 64 KiB block)")
        }
    }

    /// The SHA-256 of each 64 KiB block of a version of the scenario's resource, lower-case hex.
    func blockDigests(_ entry: CatalogueEntry, version: Int) -> [String] {
        digests(entry, version: version).blocks
    }

    private func fullDigest(_ entry: CatalogueEntry, version: Int) -> String {
        digests(entry, version: version).whole
    }

    private func digests(_ entry: CatalogueEntry, version: Int) -> (blocks: [String], whole: String) {
        let key = "\(entry.name)\u{0}\(version)"
        if let known = cache.withLockedValue({ $0[key] }) { return known }
        var blocks: [String] = []
        var whole = SHA256()
        entry.content(ofVersion: version).forEachBlock(version: version, size: OutputInspector.blockSize) { block in
            whole.update(bufferPointer: block)
            blocks.append(Self.hex(SHA256.hash(data: block)))
        }
        let wholeDigest = Self.hex(whole.finalize())
        cache.withLockedValue { $0[key] = (blocks, wholeDigest) }
        return (blocks, wholeDigest)
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
