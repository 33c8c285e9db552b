/// Deterministic content for `/bytes/{size}`: byte `i` is a pure function of `(seed, version, i)`.
///
/// Each 8-byte word is a SplitMix64 output of its word index mixed with a key derived from the seed and
/// version, so any range is produced in time proportional to its length, with no state and no disk.
package struct ContentGenerator: Hashable, Sendable {
    /// The seed the content was derived from.
    public let seed: UInt64
    /// The representation version; two versions of the same seed differ everywhere.
    public let version: UInt64
    private let key: UInt64

    /// Creates the generator for one `(seed, version)` pair.
    public init(seed: UInt64, version: UInt64) {
        self.seed = seed
        self.version = version
        self.key = Self.mix(seed ^ Self.mix(version &+ 0x5851_F42D_4C95_7F2D))
    }

    /// Fills `buffer` with the content starting at `offset`.
    ///
    /// - Parameters:
    ///   - buffer: where the bytes go; its whole length is filled.
    ///   - offset: the position in the content of `buffer[0]`.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: UInt64) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var position = 0
        var word = offset >> 3
        let skip = Int(offset & 7)
        if skip != 0 {
            let value = self.word(at: word)
            let count = min(8 - skip, buffer.count)
            for index in 0..<count {
                base.storeBytes(
                    of: UInt8(truncatingIfNeeded: value >> (8 * UInt64(skip + index))), toByteOffset: index,
                    as: UInt8.self)
            }
            position = count
            word &+= 1
        }
        // Consecutive words feed `mix` inputs one golden-ratio step apart, so the input advances by an addition
        // rather than a multiplication, and four independent words per pass keep the multipliers busy.
        let step: UInt64 = 0x9E37_79B9_7F4A_7C15
        var input = key &+ word &* step &+ step
        while buffer.count - position >= 32 {
            let first = Self.finish(input)
            let second = Self.finish(input &+ step)
            let third = Self.finish(input &+ step &* 2)
            let fourth = Self.finish(input &+ step &* 3)
            base.storeBytes(of: first.littleEndian, toByteOffset: position, as: UInt64.self)
            base.storeBytes(of: second.littleEndian, toByteOffset: position &+ 8, as: UInt64.self)
            base.storeBytes(of: third.littleEndian, toByteOffset: position &+ 16, as: UInt64.self)
            base.storeBytes(of: fourth.littleEndian, toByteOffset: position &+ 24, as: UInt64.self)
            input &+= step &* 4
            position &+= 32
            word &+= 4
        }
        while buffer.count - position >= 8 {
            base.storeBytes(of: Self.finish(input).littleEndian, toByteOffset: position, as: UInt64.self)
            input &+= step
            position &+= 8
            word &+= 1
        }
        if position < buffer.count {
            let value = self.word(at: word)
            for index in 0..<(buffer.count - position) {
                base.storeBytes(
                    of: UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))), toByteOffset: position + index,
                    as: UInt8.self)
            }
        }
    }

    /// The content bytes in `offset ..< offset + count`, as an array (for tests and small bodies).
    public func bytes(offset: UInt64, count: Int) -> [UInt8] {
        // An empty array is the runtime's shared empty storage, whose count the initializer below would write: two
        // threads asking for no bytes at once were a ThreadSanitizer report (a race on `_swiftEmptyArrayStorage`).
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer), offset: offset)
            initialized = count
        }
    }

    @inline(__always)
    private func word(at index: UInt64) -> UInt64 {
        Self.mix(key &+ index &* 0x9E37_79B9_7F4A_7C15)
    }

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        finish(value &+ 0x9E37_79B9_7F4A_7C15)
    }

    /// SplitMix64's output function, applied to an input that already includes the golden-ratio increment.
    @inline(__always)
    private static func finish(_ input: UInt64) -> UInt64 {
        var z = input
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
