/// Whether two byte sequences are equal with ASCII letters compared case-insensitively; `lowerCase` must be lower
/// case already. Header names, units and structured-field keys are ASCII, and this allocates nothing.
///
/// - Parameters:
///   - bytes: The bytes as received.
///   - lowerCase: The expected spelling, in lower case.
/// - Returns: Whether they name the same token.
@inlinable
public func asciiCaseInsensitiveEqual(_ bytes: some Collection<UInt8>, _ lowerCase: some Collection<UInt8>) -> Bool {
    bytes.count == lowerCase.count
        && zip(bytes, lowerCase).allSatisfy { a, b in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(a) ? a | 0x20 == b : a == b
        }
}

/// `OWS` characters (RFC 9110 §5.6.3): space and horizontal tab.
///
/// - Parameter byte: A byte of a field value.
/// - Returns: Whether it is a space or a horizontal tab.
@inlinable
public func isOptionalWhitespace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
}

/// A `tchar` (RFC 9110 §5.6.2): a byte allowed in a token, such as a field name.
///
/// - Parameter byte: A byte of a token.
/// - Returns: Whether it is a digit, a letter or one of ``!#$%&'*+-.^_`|~``.
@inlinable
public func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "A")...UInt8(ascii: "Z"):
        true
    default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
