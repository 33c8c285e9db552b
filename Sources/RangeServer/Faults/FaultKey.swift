/// One fault key of a query or a scenario step, declared once: its name, how its value parses and prints
/// canonically, its help line, its kind, how it merges and what it does to the body.
///
/// Each key is a static member in a file of its own under `Faults/Keys/` and is listed once in ``all``. The parser
/// (`FaultPlan.parse`), the merge of a query over a scenario step, the journal's `appliedNames`, the journal's list of
/// faults that only a body can carry, the `/` index page and the body reader's fault list all read the descriptors;
/// tests hold `fixtures/scenarios/schema.json` and the key table of docs/faults.md to them. The value itself is a
/// typed field of `FaultPlan`, so the response path reads plain fields, never a descriptor.
package struct FaultKey: Sendable {
    /// What part of the exchange a fault changes; the index page groups keys by it.
    package enum Kind: String, CaseIterable, Sendable {
        /// Replaces or refuses the answer (`status`, `head`, `416-shape`, `connection-cap`).
        case status
        /// Changes the headers or which bytes a range answer carries (validators, `ignore-range`, `encoding`, ...).
        case headers
        /// Changes how the body is delimited (`chunked`, `length-delta`, ...).
        case bodyFraming = "body-framing"
        /// Changes when and which body bytes go out (`delay`, `rate`, `stall-after`, `garbage-after`).
        case bodyDelivery = "body-delivery"
        /// Ends the connection early (`drop-after`, `reset-after`, `tls-truncate-after`).
        case connection
        /// Decides whether the other faults apply at all (`probability`, `fault-seed`).
        case chance

        /// The heading of this kind on the index page.
        var title: String {
            switch self {
            case .status: "Status"
            case .headers: "Headers and ranges"
            case .bodyFraming: "Body framing"
            case .bodyDelivery: "Body delivery"
            case .connection: "Connection"
            case .chance: "Chance"
            }
        }
    }

    /// How a key set in a query layers over the same key in a scenario step (`FaultPlan.merged(over:)`).
    enum Merge: Sendable, Equatable {
        /// The query's value, when it sets one, replaces the step's.
        case alone
        /// Keys of this group move as a unit: when the query sets any of them, all of them come from the query
        /// (the connection ends one way only; one ETag shape).
        case together(String)
        /// Comes from the query with the named key whenever the query sets that key (even when the query leaves this
        /// one unset); on its own, like `alone`.
        case follows(String)
    }

    /// The key as written in a query or a scenario step, e.g. `drop-after`.
    package let name: String
    /// What part of the exchange the fault changes.
    package let kind: Kind
    /// The value's form as docs/faults.md's key table shows it, e.g. `size` or `` `405` ``.
    package let valueForm: String
    /// The value on the index page, e.g. `SIZE`.
    package let placeholder: String
    /// A valid value, for examples and tests.
    package let example: String
    /// One line: what the fault does.
    package let help: String
    /// The end of the one-line error for a bad value: `key=value: expected <this>`.
    let expected: String
    /// How the key merges.
    let merge: Merge
    /// Whether the journal names the fault only on a response that carries the representation (200 or 206): a body
    /// fault means nothing on a 304 or 416, so it is not listed there.
    let needsBody: Bool
    /// Whether the fault shapes the response from its first byte (status line and headers), so that a client that
    /// closes it did not leave a healthy response of its own accord (see `FaultPlan.shapingKeys`).
    let shapesResponse: Bool
    /// Sets the fault from its text; false when the text is not a valid value.
    let assign: @Sendable (inout FaultPlan, String) -> Bool
    /// The canonical text of the value, or nil when the fault is not set (an unset flag is `false`).
    let read: @Sendable (FaultPlan) -> String?
    /// Whether the fault is set (cheaper than `read`, which formats the value).
    let isSet: @Sendable (FaultPlan) -> Bool
    /// Copies this fault's value, set or not, from the second plan into the first.
    let copy: @Sendable (inout FaultPlan, FaultPlan) -> Void
    /// What the fault makes the body reader do, when it is set (see `BodyFault`).
    let bodyFault: (@Sendable (FaultPlan) -> BodyFault?)?
    /// For a key that may be given several times (`header`): the canonical text of each value, in order; nil for
    /// the keys given at most once.
    private(set) var readEach: (@Sendable (FaultPlan) -> [String])?
    #if !FAULT_SYNTAX_ONLY
    /// What the fault does to the response, at the stages of the response path (see ``FaultHooks``).
    var hooks = FaultHooks()
    #endif

    /// A key whose value is an optional field of `FaultPlan`.
    ///
    /// - Parameters:
    ///   - field: the plan's field.
    ///   - parse: the value from its text, nil when invalid.
    ///   - format: the canonical text, which `parse` reads back to the same value.
    init<Value>(
        _ name: String, kind: Kind, valueForm: String, placeholder: String, example: String, help: String,
        expected: String, merge: Merge = .alone, needsBody: Bool = false, shapesResponse: Bool = false,
        field: WritableKeyPath<FaultPlan, Value?> & Sendable,
        parse: @escaping @Sendable (String) -> Value?, format: @escaping @Sendable (Value) -> String,
        bodyFault: (@Sendable (FaultPlan) -> BodyFault?)? = nil
    ) {
        self.init(
            name: name, kind: kind, valueForm: valueForm, placeholder: placeholder, example: example, help: help,
            expected: expected, merge: merge, needsBody: needsBody, shapesResponse: shapesResponse,
            assign: { plan, text in
                guard let value = parse(text) else { return false }
                plan[keyPath: field] = value
                return true
            },
            read: { plan in plan[keyPath: field].map(format) },
            isSet: { plan in plan[keyPath: field] != nil },
            copy: { target, source in target[keyPath: field] = source[keyPath: field] },
            bodyFault: bodyFault)
    }

    /// A key whose value is one of a `RawRepresentable` type's raw values (`encoding=gzip`).
    init<Value: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, kind: Kind, help: String, merge: Merge = .alone, needsBody: Bool = false,
        shapesResponse: Bool = false, field: WritableKeyPath<FaultPlan, Value?> & Sendable
    ) where Value.RawValue == String {
        let choices = Value.allCases.map(\.rawValue)
        self.init(
            name, kind: kind, valueForm: Self.listing(choices.map { "`\($0)`" }),
            placeholder: choices.joined(separator: "|"), example: choices.last ?? "", help: help,
            expected: Self.listing(choices), merge: merge, needsBody: needsBody, shapesResponse: shapesResponse,
            field: field, parse: { Value(rawValue: $0) }, format: { $0.rawValue })
    }

    /// A boolean key: `1`, `true`, `0` or `false` in any case, an empty value meaning true; printed as `1` when set.
    static func flag(
        _ name: String, kind: Kind, help: String, merge: Merge = .alone, needsBody: Bool = false,
        shapesResponse: Bool = false, field: WritableKeyPath<FaultPlan, Bool> & Sendable
    ) -> FaultKey {
        FaultKey(
            name: name, kind: kind, valueForm: "flag", placeholder: "1", example: "1", help: help,
            expected: "1, true, 0 or false", merge: merge, needsBody: needsBody, shapesResponse: shapesResponse,
            assign: { plan, text in
                guard let value = FaultPlan.flag(text) else { return false }
                plan[keyPath: field] = value
                return true
            },
            read: { plan in plan[keyPath: field] ? "1" : nil },
            isSet: { plan in plan[keyPath: field] },
            copy: { target, source in target[keyPath: field] = source[keyPath: field] },
            bodyFault: nil)
    }

    /// A key with one accepted value that switches a boolean field on (`if-range=date-only`).
    static func token(
        _ name: String, value: String, kind: Kind, help: String, needsBody: Bool = false,
        shapesResponse: Bool = false, field: WritableKeyPath<FaultPlan, Bool> & Sendable
    ) -> FaultKey {
        FaultKey(
            name: name, kind: kind, valueForm: "`\(value)`", placeholder: value, example: value, help: help,
            expected: value, merge: .alone, needsBody: needsBody, shapesResponse: shapesResponse,
            assign: { plan, text in
                guard text == value else { return false }
                plan[keyPath: field] = true
                return true
            },
            read: { plan in plan[keyPath: field] ? value : nil },
            isSet: { plan in plan[keyPath: field] },
            copy: { target, source in target[keyPath: field] = source[keyPath: field] },
            bodyFault: nil)
    }

    private init(
        name: String, kind: Kind, valueForm: String, placeholder: String, example: String, help: String,
        expected: String, merge: Merge, needsBody: Bool, shapesResponse: Bool,
        assign: @escaping @Sendable (inout FaultPlan, String) -> Bool,
        read: @escaping @Sendable (FaultPlan) -> String?,
        isSet: @escaping @Sendable (FaultPlan) -> Bool,
        copy: @escaping @Sendable (inout FaultPlan, FaultPlan) -> Void,
        bodyFault: (@Sendable (FaultPlan) -> BodyFault?)?
    ) {
        self.name = name
        self.kind = kind
        self.valueForm = valueForm
        self.placeholder = placeholder
        self.example = example
        self.help = help
        self.expected = expected
        self.merge = merge
        self.needsBody = needsBody
        self.shapesResponse = shapesResponse
        self.assign = assign
        self.read = read
        self.isSet = isSet
        self.copy = copy
        self.bodyFault = bodyFault
    }

    /// A key that may be given several times, each value appended to an array field in order (`header=A:1&header=B:2`).
    ///
    /// - Parameters:
    ///   - field: the plan's field; empty when the key is not set.
    ///   - parse: one value from its text, nil when invalid.
    ///   - format: one value's canonical text, which `parse` reads back to the same value.
    static func repeatable<Value: Sendable>(
        _ name: String, kind: Kind, valueForm: String, placeholder: String, example: String, help: String,
        expected: String, shapesResponse: Bool = false, field: WritableKeyPath<FaultPlan, [Value]> & Sendable,
        parse: @escaping @Sendable (String) -> Value?, format: @escaping @Sendable (Value) -> String
    ) -> FaultKey {
        var key = FaultKey(
            name: name, kind: kind, valueForm: valueForm, placeholder: placeholder, example: example, help: help,
            expected: expected, merge: .alone, needsBody: false, shapesResponse: shapesResponse,
            assign: { plan, text in
                guard let value = parse(text) else { return false }
                plan[keyPath: field].append(value)
                return true
            },
            // All values in one text that, after `NAME=`, is a query giving them all (`A:1&header=B:2`).
            read: { plan in
                plan[keyPath: field].isEmpty ? nil : plan[keyPath: field].map(format).joined(separator: "&\(name)=")
            },
            isSet: { plan in !plan[keyPath: field].isEmpty },
            copy: { target, source in target[keyPath: field] = source[keyPath: field] },
            bodyFault: nil)
        key.readEach = { plan in plan[keyPath: field].map(format) }
        return key
    }

    /// `a`, `a or b`, `a, b or c`.
    static func listing(_ items: [String]) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " or " + items.last!
    }

    /// The value forms shared by several keys, as docs/faults.md writes them.
    static let sizeForm = "size"
    static let sizeExpected = "a size: decimal bytes with an optional K/M/G/T suffix, like 2400K"
    static let durationForm = "duration"
    static let durationExpected = "a duration like 250ms, 1.5s or 2"

    /// A key whose value is a size (`drop-after=2400K`).
    static func size(
        _ name: String, kind: Kind, help: String, merge: Merge = .alone, needsBody: Bool = false,
        shapesResponse: Bool = false, field: WritableKeyPath<FaultPlan, UInt64?> & Sendable,
        bodyFault: (@Sendable (FaultPlan) -> BodyFault?)? = nil
    ) -> FaultKey {
        FaultKey(
            name, kind: kind, valueForm: sizeForm, placeholder: "SIZE", example: "1", help: help,
            expected: sizeExpected, merge: merge, needsBody: needsBody, shapesResponse: shapesResponse, field: field,
            parse: { ByteSize.parse($0) }, format: { ByteSize.format($0) }, bodyFault: bodyFault)
    }
}

extension FaultKey: Hashable {
    package static func == (lhs: FaultKey, rhs: FaultKey) -> Bool { lhs.name == rhs.name }
    package func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

extension FaultKey: CustomStringConvertible {
    package var description: String { name }
}
