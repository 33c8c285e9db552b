/// One header field, request or response: a name and a value.
///
/// A struct rather than a `(name: String, value: String)` tuple: an array of tuples is copied and destroyed
/// through the runtime's generic tuple witnesses, element by element, and every request and response carries a few
/// of these arrays (about a thousand instructions per request went to destroying them).
struct HeaderField: Hashable, Sendable {
    /// The field name; lower-cased for request fields, as sent for response fields.
    var name: String
    /// The field value.
    var value: String

    init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
