/// Writes each repeated string of a JSON value once: the results page's data, where every cell of a column repeats
/// the column's server line, steps and rules, and every row's cells repeat its validators.
///
/// A string of at least ``minimumLength`` characters occurring more than once goes into a table, in the order of its
/// first occurrence (objects' keys taken in sorted order, so the result is a function of the value), and each
/// occurrence becomes `{"$": INDEX}`. Every object key is replaced by its index in a second table, `keys` (in the
/// order first met): the same few dozen names (`reproducer`, `compare`, every scenario's) recur in every cell. The
/// page's script reverses both in `JSON.parse`'s reviver.
enum StringTable {
    /// The shortest string worth a table entry: `{"$":123}` is about as long as a seven-character string.
    static let minimumLength = 8

    /// The tables and the value with its repeated strings and its keys replaced.
    ///
    /// - Parameters:
    ///   - value: the value.
    /// - Returns: the strings, the keys, and the value referring to them.
    static func interned(_ value: JSONValue) -> (strings: [String], keys: [String], value: JSONValue) {
        var counts: [String: Int] = [:]
        var order: [String] = []
        func count(_ value: JSONValue) {
            switch value {
            case .string(let text) where text.count >= minimumLength:
                if counts[text] == nil { order.append(text) }
                counts[text, default: 0] += 1
            case .array(let items): items.forEach(count)
            case .object(let members): for key in members.keys.sorted() { count(members[key]!) }
            default: break
            }
        }
        count(value)
        var keys: [String] = []
        var keyIndex: [String: Int] = [:]
        func collectKeys(_ value: JSONValue) {
            switch value {
            case .array(let items): items.forEach(collectKeys)
            case .object(let members):
                for key in members.keys.sorted() {
                    if keyIndex[key] == nil {
                        keyIndex[key] = keys.count
                        keys.append(key)
                    }
                    collectKeys(members[key]!)
                }
            default: break
            }
        }
        collectKeys(value)
        let strings = order.filter { counts[$0]! > 1 }
        let index = Dictionary(uniqueKeysWithValues: strings.enumerated().map { ($1, $0) })
        func replaced(_ value: JSONValue) -> JSONValue {
            switch value {
            case .string(let text): index[text].map { .object(["$": .number(Double($0))]) } ?? value
            case .array(let items): .array(items.map(replaced))
            case .object(let members):
                .object(
                    Dictionary(
                        uniqueKeysWithValues: members.map { key, member in (String(keyIndex[key]!), replaced(member)) })
                )
            default: value
            }
        }
        return (strings, keys, replaced(value))
    }
}
