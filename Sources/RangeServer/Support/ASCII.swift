#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension UInt8 {
    /// The byte with an ASCII capital letter lower-cased; every other byte unchanged.
    ///
    /// For protocol tokens (header names, file suffixes) compared without building lower-cased Strings.
    var asciiLowercased: UInt8 {
        self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z") ? self | 0x20 : self
    }
}

extension StringProtocol {
    /// Whether the UTF-8 bytes start with `prefix`'s, compared as bytes in one `memcmp`-like loop over contiguous
    /// storage: the generic `utf8.starts(with:)` walks both views index by index, which cost hundreds of
    /// instructions per call on the request path.
    func hasUTF8Prefix(_ prefix: StaticString) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
            for index in 0..<prefix.utf8CodeUnitCount where bytes[index] != prefix.utf8Start[index] {
                return false
            }
            return true
        }
        if let fast { return fast }
        return utf8.starts(with: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
    }

    /// The offset in UTF-8 bytes of the first `byte`, or nil; a plain loop over contiguous storage when there is
    /// some.
    func utf8Offset(of byte: UInt8) -> Int? {
        let fast = utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            for index in 0..<bytes.count where bytes[index] == byte { return index }
            return nil
        }
        if let fast { return fast }
        return utf8.firstIndex(of: byte).map { utf8.distance(from: utf8.startIndex, to: $0) }
    }
}

extension String {
    /// Whether `other` holds the same UTF-8 bytes. `==` also calls canonically equivalent spellings equal (a
    /// precomposed "é" and an "e" with a combining accent), which is wrong wherever the bytes themselves matter: a
    /// file name, a header value on the wire.
    func hasSameUTF8(as other: String) -> Bool {
        let compared = utf8.withContiguousStorageIfAvailable { x in
            other.utf8.withContiguousStorageIfAvailable { y in
                x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
        if let compared, let compared { return compared }
        return utf8.elementsEqual(other.utf8)
    }
}
