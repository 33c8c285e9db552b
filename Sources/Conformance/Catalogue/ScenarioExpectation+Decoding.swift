import RangeServer

extension ScenarioExpectation: Decodable {
    /// The members of an `expect` object.
    enum Key: String, CodingKey, CaseIterable {
        case outcome, failure, version, sha256, files, concurrency
        case maxRefetched = "max-refetched"
        case maxRequests = "max-requests"
        case range = "resume-range"
        case ifRange = "if-range"
        case minElapsed = "min-elapsed"
        case maxElapsed = "max-elapsed"
        case maxConnections = "max-connections"
        case steps
        case leavesNoOutput = "leaves-no-output"
        case tags
        case entry
        case connectTimeout = "connect-timeout"
        case retries
        case authorization
        case outputNames = "output-names"
    }

    /// Whether `name` names a file in a directory, nothing above or beside it: what `output-names` may hold.
    static func isPlainFileName(_ name: String) -> Bool {
        name.utf8.count <= 255 && hasPlainFileNameForm(name)
    }

    /// The rules a file name keeps whatever its length is measured in: not empty, not `.` or `..`, and no `/` or
    /// control character (U+0000-U+001F, U+007F). The API's reported names keep them too, counting code points.
    static func hasPlainFileNameForm(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".."
            && !name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 < 0x20 || $0 == 0x7F })
    }

    /// Decodes an `expect` object, strictly: unknown keys and bad values are errors at the key.
    ///
    /// - Parameters:
    ///   - decoder: a decoder positioned at the object (`ScenarioSection.decode(_:)`).
    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, allowed: Self.keys)
        let c = try decoder.container(keyedBy: Key.self)
        func bad(_ key: Key, _ reason: String) -> DecodingError {
            .dataCorruptedError(forKey: key, in: c, debugDescription: reason)
        }
        func string(_ key: Key) throws -> String? {
            guard c.contains(key) else { return nil }
            guard let text = try? c.decode(String.self, forKey: key) else { throw bad(key, "must be a string") }
            return text
        }
        func integer(_ key: Key, minimum: Int) throws -> Int? {
            guard c.contains(key) else { return nil }
            guard let number = try? c.decode(Int.self, forKey: key), number >= minimum, number < 1_000_000_000_000_000
            else { throw bad(key, "must be an integer of at least \(minimum)") }
            return number
        }
        func size(_ key: Key) throws -> UInt64? {
            guard c.contains(key) else { return nil }
            if let bytes = try? c.decode(UInt64.self, forKey: key) { return bytes }
            guard let text = try? c.decode(String.self, forKey: key) else {
                throw bad(key, "must be a size: an integer or a string like 64K")
            }
            guard let bytes = ByteSize.parse(text) else { throw bad(key, "\"\(text)\" is not a size like 64K") }
            return bytes
        }

        self.init()
        switch try string(.outcome) {
        case "success": outcome = .success
        case "failure": outcome = .failure(kind: try string(.failure) ?? "any")
        case "cancelled": outcome = .cancelled
        case "intact": outcome = .intact
        case nil: throw bad(.outcome, "is required: success, failure, cancelled or intact")
        case let other?: throw bad(.outcome, "\"\(other)\" is not success, failure, cancelled or intact")
        }
        if case .failure(let kind) = outcome, !Self.isFailureKind(kind) {
            throw bad(.failure, "\"\(kind)\" is not http-NNN, too-many-redirects, tls or any")
        }
        if c.contains(.failure), try string(.outcome) != "failure" {
            throw bad(.failure, "requires \"outcome\": \"failure\"")
        }
        version = try integer(.version, minimum: 1)
        if let digest = try string(.sha256) {
            guard digest.count == 64, digest.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
                throw bad(.sha256, "must be 64 lower-case hex digits")
            }
            sha256 = digest
        }
        if (version != nil || sha256 != nil) && outcome != .success {
            throw bad(version != nil ? .version : .sha256, "requires \"outcome\": \"success\"")
        }
        if c.contains(.files) {
            guard let routes = try? c.decode([String].self, forKey: .files), !routes.isEmpty,
                !routes.contains(where: \.isEmpty)
            else { throw bad(.files, "must be a non-empty array of route names") }
            files = routes
        }
        concurrency = try integer(.concurrency, minimum: 1)
        maxRefetched = try size(.maxRefetched)
        maxRequests = try integer(.maxRequests, minimum: 1)
        if let text = try string(.range) {
            guard let rule = RangeRule(rawValue: text) else {
                throw bad(.range, "\"\(text)\" is not any, exact, at-most or forbidden")
            }
            range = rule
        }
        if let text = try string(.ifRange) {
            guard let rule = IfRangeRule(rawValue: text) else {
                throw bad(.ifRange, "\"\(text)\" is not any, etag or last-modified")
            }
            ifRange = rule
        }
        minElapsed = try decodeDuration(c, .minElapsed)
        maxElapsed = try decodeDuration(c, .maxElapsed)
        maxConnections = try integer(.maxConnections, minimum: 1)
        if c.contains(.leavesNoOutput) {
            guard let flag = try? c.decode(Bool.self, forKey: .leavesNoOutput) else {
                throw bad(.leavesNoOutput, "must be true or false")
            }
            leavesNoOutput = flag
        } else {
            leavesNoOutput = outcome == .cancelled
        }
        if c.contains(.tags) {
            guard let labels = try? c.decode([String].self, forKey: .tags) else {
                throw bad(.tags, "must be an array of strings")
            }
            tags = Set(labels)
        }
        if let text = try string(.entry) {
            guard let value = Entry(rawValue: text) else {
                throw bad(.entry, "\"\(text)\" is not server, blackhole or dead-ipv6")
            }
            entry = value
        }
        connectTimeout = try decodeDuration(c, .connectTimeout)
        retries = try integer(.retries, minimum: 0)
        if let value = try string(.authorization) {
            // Printable ASCII only: a header value as every client's header option takes it, never a line break.
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw bad(.authorization, "must be a non-empty header value of printable ASCII")
            }
            authorization = value
        }
        if c.contains(.outputNames) {
            guard let names = try? c.decode([String].self, forKey: .outputNames), !names.isEmpty else {
                throw bad(.outputNames, "must be a non-empty array of file names")
            }
            if let name = names.first(where: { !Self.isPlainFileName($0) }) {
                throw bad(
                    .outputNames, "\"\(name)\" is not a plain file name (no '/', not '.' or '..', at most 255 bytes)")
            }
            guard files.count <= 1 else { throw bad(.outputNames, "cannot be combined with several files") }
            outputNames = names
        }
        if c.contains(.steps) {
            guard var items = try? c.nestedUnkeyedContainer(forKey: .steps) else {
                throw bad(.steps, "must be an array of step objects")
            }
            while !items.isAtEnd { steps.append(try items.decode(StepObject.self).step) }
        }
        if case .cancelled = outcome, !steps.contains(where: { if case .cancel = $0 { true } else { false } }) {
            throw bad(.outcome, "\"cancelled\" requires a cancel-at step")
        }
        if steps.count(where: { if case .diskFull = $0 { true } else { false } }) > 1 {
            throw bad(.steps, "has more than one disk-full-at step")
        }
    }
}

/// One member of `expect.steps`: exactly one of `kill-at`, `pause-at` (with an optional `pause-for`), `cancel-at`,
/// `prefill`, `disk-full-at`.
private struct StepObject: Decodable {
    static let keys = ["kill-at", "pause-at", "pause-for", "cancel-at", "prefill", "disk-full-at"]

    var step: ScenarioExpectation.Step

    init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, allowed: Self.keys)
        let c = try decoder.container(keyedBy: NameKey.self)
        let actions = c.allKeys.filter { $0.stringValue != "pause-for" }
        guard actions.count == 1, let action = actions.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "must have exactly one of kill-at, pause-at, cancel-at, prefill, disk-full-at"))
        }
        if action.stringValue == "disk-full-at" {
            // The filesystem's size: a size, never a share of a download the filesystem must hold part of.
            guard let text = try? c.decode(String.self, forKey: action), let size = ByteSize.parse(text), size > 0
            else {
                throw DecodingError.dataCorruptedError(
                    forKey: action, in: c, debugDescription: "must be a size above 0 like 2M (the filesystem's room)")
            }
            step = .diskFull(at: size)
            return
        }
        guard let text = try? c.decode(String.self, forKey: action),
            let threshold = ScenarioExpectation.parseThreshold(text)
        else {
            throw DecodingError.dataCorruptedError(
                forKey: action, in: c, debugDescription: "must be a size like 1M or a percentage like 25%")
        }
        let pauseFor = NameKey(stringValue: "pause-for")
        if action.stringValue != "pause-at", c.contains(pauseFor) {
            throw DecodingError.dataCorruptedError(forKey: pauseFor, in: c, debugDescription: "requires pause-at")
        }
        switch action.stringValue {
        case "kill-at": step = .killAndRestart(at: threshold)
        case "pause-at": step = .pause(at: threshold, for: try decodeDuration(c, pauseFor) ?? .seconds(1))
        case "cancel-at": step = .cancel(at: threshold)
        default: step = .prefill(threshold)
        }
    }
}

/// Any member name, for finding the members a type does not know.
struct NameKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Throws at the first member (by name) that is not in `allowed`.
func rejectUnknownKeys(_ decoder: any Decoder, allowed: [String]) throws {
    let c = try decoder.container(keyedBy: NameKey.self)
    for key in c.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !allowed.contains(key.stringValue) {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: c, debugDescription: "unknown key (expected one of: \(allowed.joined(separator: ", ")))")
    }
}

/// A duration member: seconds as a number, or a string like `250ms`; nil when absent.
private func decodeDuration<Key: CodingKey>(_ c: KeyedDecodingContainer<Key>, _ key: Key) throws -> Duration? {
    guard c.contains(key) else { return nil }
    if let seconds = try? c.decode(Double.self, forKey: key), seconds >= 0 {
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
    guard let text = try? c.decode(String.self, forKey: key) else {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: c, debugDescription: "must be a duration: seconds, or a string like 250ms")
    }
    guard let duration = FaultDuration.parse(text) else {
        throw DecodingError.dataCorruptedError(
            forKey: key, in: c, debugDescription: "\"\(text)\" is not a duration like 250ms or 2s")
    }
    return duration
}
