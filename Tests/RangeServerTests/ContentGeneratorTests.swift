import RangeServer
import Testing

/// The generator's bytes are a published contract: clients and earlier runs compute expected content and
/// digests from them, so a faster `fill` must produce exactly what the plain formula produces.
@Suite("Content generator")
struct ContentGeneratorTests {
    /// The formula written out one word at a time, independently of `ContentGenerator`'s own loops.
    struct Reference {
        let key: UInt64

        init(seed: UInt64, version: UInt64) {
            key = Self.mix(seed ^ Self.mix(version &+ 0x5851_F42D_4C95_7F2D))
        }

        static func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        func byte(at position: UInt64) -> UInt8 {
            let word = Self.mix(key &+ (position >> 3) &* 0x9E37_79B9_7F4A_7C15)
            return UInt8(truncatingIfNeeded: word >> (8 * (position & 7)))
        }

        func bytes(offset: UInt64, count: Int) -> [UInt8] {
            (0..<UInt64(count)).map { byte(at: offset + $0) }
        }
    }

    @Test("every offset and length up to 80 bytes matches the formula", arguments: [(0, 1), (7, 3), (12_345, 2)])
    func smallRanges(seed: UInt64, version: UInt64) {
        let generator = ContentGenerator(seed: seed, version: version)
        let reference = Reference(seed: seed, version: version)
        for offset: UInt64 in [0, 1, 5, 7, 8, 9, 15, 16, 31, 33, 1 << 32 - 3] {
            for count in 0...80 {
                #expect(
                    generator.bytes(offset: offset, count: count) == reference.bytes(offset: offset, count: count),
                    "seed \(seed) version \(version) offset \(offset) count \(count)")
            }
        }
    }

    @Test("a 1 MiB block at an unaligned offset past 4 GiB matches the formula")
    func largeBlock() {
        let generator = ContentGenerator(seed: 42, version: 3)
        let reference = Reference(seed: 42, version: 3)
        let offset: UInt64 = (5 << 30) + 3
        let count = (1 << 20) + 5
        let produced = generator.bytes(offset: offset, count: count)
        let expected = reference.bytes(offset: offset, count: count)
        // Compared here rather than inside #expect, whose failure message would print a million elements.
        let firstDifference = produced.indices.first { produced[$0] != expected[$0] }
        #expect(produced.count == count)
        #expect(firstDifference == nil, "first differing byte at \(firstDifference ?? -1)")
    }

    @Test("the first bytes of /bytes with seed 0, version 1 are pinned")
    func pinnedPrefix() {
        // Computed outside Swift (a few lines of Python with 64-bit masks) from the formula; never to change.
        let pinned: [UInt8] = [
            0xBC, 0x20, 0x50, 0x27, 0x1F, 0xA1, 0x96, 0x95, 0x76, 0xD7, 0x85, 0x1A, 0xDD, 0xFD, 0x0E, 0x88,
        ]
        #expect(ContentGenerator(seed: 0, version: 1).bytes(offset: 0, count: 16) == pinned)
        #expect(Reference(seed: 0, version: 1).bytes(offset: 0, count: 16) == pinned)
    }
}
