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
    @inline(__always)
    func hasName(_ other: String) -> Bool {
        var other = other
        var name = name
        return name.withUTF8 { sent in
            other.withUTF8 { wanted in
                guard sent.count == wanted.count else { return false }
                for index in 0..<sent.count where sent[index].asciiLowercased != wanted[index].asciiLowercased {
                    return false
                }
                return true
            }
        }
    }
}
