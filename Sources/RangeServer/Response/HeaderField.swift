/// One header field, request or response: a name and a value.
///
/// A struct rather than a `(name: String, value: String)` tuple: an array of tuples is copied and destroyed
/// through the runtime's generic tuple witnesses, element by element, and every request and response carries a few
/// of these arrays (about a thousand instructions per request went to destroying them).
struct HeaderField: Hashable, Sendable {
    /// The field name, as sent (request fields) or as planned (response fields).
    var name: String
    /// The field value.
    var value: String

    init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the name is `other`, ASCII letters in any case, as RFC 9110 §5.1 compares field names.
    ///
    /// Byte by byte: `lowercased()` on every name of every request made a string each time.
    func hasName(_ other: String) -> Bool {
        var other = other
        return other.withUTF8 { wanted in
            name.utf8.elementsEqual(wanted) { $0.asciiLowercased == $1.asciiLowercased }
        }
    }

    /// Whether the name is `lowercased`, a literal of lower-case letters and `-` (the names the router looks for), in
    /// any case.
    ///
    /// Setting bit 5 folds an ASCII capital onto its small letter; `-` is compared as it is, since bit 5 would fold
    /// a CR (0x0D) onto it, and a name over HTTP/2, whose field checks are off for the faults' sake, may hold one (the
    /// `h2-request` fuzz target found `if\rrange` read as `If-Range`). No other byte folds onto a small letter. The
    /// conditional fields are looked for on every request, and the general comparison cost about 200 instructions a
    /// request there (callgrind).
    @inline(__always)
    func hasName(lowercased: StaticString) -> Bool {
        let count = lowercased.utf8CodeUnitCount
        let wanted = lowercased.utf8Start
        let answer = name.utf8.withContiguousStorageIfAvailable { sent -> Bool in
            guard sent.count == count else { return false }
            for index in 0..<count {
                let folded = wanted[index] == UInt8(ascii: "-") ? sent[index] : sent[index] | 0x20
                if folded != wanted[index] { return false }
            }
            return true
        }
        return answer ?? hasName(String(describing: lowercased))
    }
}
