/// Fuzzes `SafePath.components`, the lexical half of the `/files/` containment check.
///
/// Invariants: accepted components are never empty, `.` or `..`, and never contain `/`, `\` or NUL; they
/// are valid UTF-8 (Swift strings); re-encoding them and parsing again gives the same components; and a
/// path without `%` escapes is split exactly on `/`.
@_cdecl("LLVMFuzzerTestOneInput")
public func safePathFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = fuzzText(start, count)
    guard let components = SafePath.components(Substring(text)) else { return 0 }
    fuzzCheck(!components.isEmpty, "accepted path has components")
    for component in components {
        let bytes = Array(component.utf8)
        fuzzCheck(!bytes.isEmpty, "no empty component")
        fuzzCheck(component != "." && component != "..", "no dot segment: \(component)")
        fuzzCheck(!bytes.contains(UInt8(ascii: "/")), "no slash in \(component)")
        fuzzCheck(!bytes.contains(UInt8(ascii: "\\")), "no backslash in \(component)")
        fuzzCheck(!bytes.contains(0), "no NUL in a component")
    }
    let reencoded = components.map(percentEncodeAll).joined(separator: "/")
    fuzzCheck(SafePath.components(Substring(reencoded)) == components, "re-encoded \(reencoded) parses the same")
    if !text.contains("%") {
        let split = text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        fuzzCheck(components == split.map { String(decoding: $0, as: UTF8.self) }, "plain path splits on the / byte")
    }
    return 0
}

/// Percent-encodes every byte, the most hostile legal spelling of a component.
private func percentEncodeAll(_ component: String) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    var output: [UInt8] = []
    for byte in component.utf8 {
        output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
    }
    return String(decoding: output, as: UTF8.self)
}
