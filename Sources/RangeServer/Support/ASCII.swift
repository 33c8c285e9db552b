extension UInt8 {
    /// The byte with an ASCII capital letter lower-cased; every other byte unchanged.
    ///
    /// For protocol tokens (header names, file suffixes) compared without building lower-cased Strings.
    var asciiLowercased: UInt8 {
        self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z") ? self | 0x20 : self
    }
}
