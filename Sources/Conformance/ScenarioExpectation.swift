import RangeServer

/// What a conforming client must do in one scenario: the `expect` object of a scenario file.
///
/// Every key is optional except `outcome`; see `fixtures/scenarios/schema.json` (`$defs.expect`) and
/// `docs/conformance.md` for the format. Parsing is strict: an unknown key or a bad value is an error that
/// names the scenario and the key.
public struct ScenarioExpectation: Hashable, Sendable {
    /// How the download must end.
    public enum Outcome: Hashable, Sendable {
        /// The client reports success and every output equals the expected bytes.
        case success
        /// The client reports failure; `kind` (`http-404`, `too-many-redirects`, `any`) is judged from the journal.
        case failure(kind: String)
        /// The client reports the download as cancelled (after a `cancel-at` step).
        case cancelled
    }

    /// Where a resumed request must start.
    public enum RangeRule: String, Hashable, Sendable, CaseIterable {
        /// No rule beyond the always-on one (a Range never starts past the bytes received).
        case any
        /// After an interruption the client must resume, starting exactly at the bytes received.
        case exact
        /// After an interruption the client must resume (not restart), at or before the bytes received.
        case atMost = "at-most"
        /// No request may carry Range: there is no safe validator, so the client must restart.
        case forbidden
    }

    /// What a request with Range must carry in If-Range.
    public enum IfRangeRule: String, Hashable, Sendable, CaseIterable {
        /// Anything (a weak ETag is still always refused).
        case any
        /// The strong ETag of the representation the kept bytes came from.
        case etag
        /// The Last-Modified date of the representation the kept bytes came from.
        case lastModified = "last-modified"
    }

    /// Where in the download a client-side step happens.
    public enum Threshold: Hashable, Sendable {
        /// When the bytes on disk reach this count.
        case bytes(UInt64)
        /// When the bytes on disk reach this percentage of the total (0 to 100).
        case percent(Double)

        /// The byte count for a download of `total` bytes.
        ///
        /// - Parameters:
        ///   - total: all bytes of all files.
        /// - Returns: the threshold in bytes.
        public func bytes(of total: UInt64) -> UInt64 {
            switch self {
            case .bytes(let count): count
            case .percent(let percent): UInt64(Double(total) * percent / 100)
            }
        }
    }

    /// Something the harness does to the client while it runs.
    public enum Step: Hashable, Sendable {
        /// Kill the client with SIGKILL at the threshold, then start it again with the same output and state.
        case killAndRestart(at: Threshold)
        /// Pause the client at the threshold, wait, then resume it.
        case pause(at: Threshold, for: Duration)
        /// Cancel the download at the threshold.
        case cancel(at: Threshold)
        /// Before starting, write the first bytes of the expected content to the output file.
        case prefill(Threshold)

        /// The capability a client needs to perform this step.
        public var capability: ClientCapabilities {
            switch self {
            case .killAndRestart: .killAndRestart
            case .pause: .pauseAndResume
            case .cancel: .cancel
            case .prefill: .prefilledOutput
            }
        }
    }

    /// How the download must end.
    public var outcome: Outcome
    /// With `success`: the resource version the output must equal; nil means the scenario's latest version.
    public var version: Int?
    /// With `success`: the SHA-256 (lower-case hex) the output must have, instead of a version.
    public var sha256: String?
    /// Route names to download as separate files (each its own output); empty means the scenario URL alone.
    public var files: [String]
    /// How many downloads the client may run at once, when `files` has several.
    public var concurrency: Int?
    /// The most bytes the server may send twice (overlapping ranges already sent, per representation).
    public var maxRefetched: UInt64?
    /// The most GET requests in the run, redirects included.
    public var maxRequests: Int?
    /// Where resumed requests must start.
    public var range: RangeRule
    /// What resumed requests must carry in If-Range.
    public var ifRange: IfRangeRule
    /// The run must take at least this long (a Retry-After was honoured, a throttle applied).
    public var minElapsed: Duration?
    /// The run must take at most this long (an idle timeout fired, a failure came at once).
    public var maxElapsed: Duration?
    /// The most connections open at the same time.
    public var maxConnections: Int?
    /// What the harness does to the client while it runs, in order.
    public var steps: [Step]
    /// After a failure or a cancel: no output file may be left (an empty one is allowed).
    public var leavesNoOutput: Bool
    /// Labels for selecting scenarios; `slow` ones run only with `--include-slow`.
    public var tags: Set<String>

    /// Makes an expectation; only `outcome` is required.
    ///
    /// - Parameters:
    ///   - outcome: how the download must end.
    ///   - version: the version the output must equal.
    ///   - sha256: the digest the output must have.
    ///   - files: route names downloaded as separate files.
    ///   - concurrency: the client's concurrency for several files.
    ///   - maxRefetched: the most bytes sent twice.
    ///   - maxRequests: the most GET requests.
    ///   - range: where resumed requests must start.
    ///   - ifRange: what resumed requests must carry in If-Range.
    ///   - minElapsed: the shortest acceptable run.
    ///   - maxElapsed: the longest acceptable run.
    ///   - maxConnections: the most simultaneous connections.
    ///   - steps: client-side steps.
    ///   - leavesNoOutput: whether a failed or cancelled run must leave no output.
    ///   - tags: labels.
    public init(
        outcome: Outcome = .success, version: Int? = nil, sha256: String? = nil, files: [String] = [],
        concurrency: Int? = nil, maxRefetched: UInt64? = nil, maxRequests: Int? = nil, range: RangeRule = .any,
        ifRange: IfRangeRule = .any, minElapsed: Duration? = nil, maxElapsed: Duration? = nil,
        maxConnections: Int? = nil, steps: [Step] = [], leavesNoOutput: Bool = false, tags: Set<String> = []
    ) {
        self.outcome = outcome
        self.version = version
        self.sha256 = sha256
        self.files = files
        self.concurrency = concurrency
        self.maxRefetched = maxRefetched
        self.maxRequests = maxRequests
        self.range = range
        self.ifRange = ifRange
        self.minElapsed = minElapsed
        self.maxElapsed = maxElapsed
        self.maxConnections = maxConnections
        self.steps = steps
        self.leavesNoOutput = leavesNoOutput
        self.tags = tags
    }

    /// The capabilities a client needs for this scenario.
    public var requiredCapabilities: ClientCapabilities {
        var needed: ClientCapabilities = []
        for step in steps { needed.insert(step.capability) }
        if files.count > 1 { needed.insert(.multipleFiles) }
        return needed
    }

    /// The keys `parse(_:scenario:)` accepts.
    public static let keys = [
        "outcome", "failure", "version", "sha256", "files", "concurrency", "max-refetched", "max-requests",
        "resume-range", "if-range", "min-elapsed", "max-elapsed", "max-connections", "steps", "leaves-no-output",
        "tags",
    ]

    /// Reads an `expect` object.
    ///
    /// - Parameters:
    ///   - value: the scenario's `expect` value; nil (no section) is an error, since every catalogue
    ///     scenario must say what passing means.
    ///   - scenario: the scenario name, for messages.
    /// - Returns: the expectation.
    /// - Throws: `ConformanceError.invalidExpectation` naming the scenario and the key.
    public static func parse(_ value: JSONValue?, scenario: String) throws(ConformanceError) -> ScenarioExpectation {
        func bad(_ key: String, _ reason: String) -> ConformanceError {
            .invalidExpectation("\(scenario): expect.\(key): \(reason)")
        }
        guard let value else { throw .invalidExpectation("\(scenario): no expect section") }
        guard let members = value.objectValue else {
            throw .invalidExpectation("\(scenario): expect must be an object")
        }
        for key in members.keys.sorted() where !keys.contains(key) {
            throw bad(key, "unknown key (expected one of: \(keys.joined(separator: ", ")))")
        }
        func string(_ key: String) throws(ConformanceError) -> String? {
            guard let member = members[key] else { return nil }
            guard case .string(let text) = member else { throw bad(key, "must be a string") }
            return text
        }
        func integer(_ key: String, minimum: Int) throws(ConformanceError) -> Int? {
            guard let member = members[key] else { return nil }
            guard case .number(let number) = member, number == number.rounded(), number >= Double(minimum),
                number < 1e15
            else { throw bad(key, "must be an integer of at least \(minimum)") }
            return Int(number)
        }
        func size(_ key: String) throws(ConformanceError) -> UInt64? {
            guard let member = members[key] else { return nil }
            switch member {
            case .number(let number) where number >= 0 && number == number.rounded() && number < 1e18:
                return UInt64(number)
            case .string(let text):
                guard let bytes = ByteSize.parse(text) else { throw bad(key, "\"\(text)\" is not a size like 64K") }
                return bytes
            default: throw bad(key, "must be a size: an integer or a string like 64K")
            }
        }
        func duration(_ key: String, _ member: JSONValue?) throws(ConformanceError) -> Duration? {
            guard let member else { return nil }
            switch member {
            case .number(let seconds) where seconds >= 0: return .milliseconds(Int64((seconds * 1000).rounded()))
            case .string(let text):
                guard let parsed = FaultDuration.parse(text) else {
                    throw bad(key, "\"\(text)\" is not a duration like 250ms or 2s")
                }
                return parsed
            default: throw bad(key, "must be a duration: seconds, or a string like 250ms")
            }
        }

        var expectation = ScenarioExpectation()
        switch try string("outcome") {
        case "success": expectation.outcome = .success
        case "failure": expectation.outcome = .failure(kind: try string("failure") ?? "any")
        case "cancelled": expectation.outcome = .cancelled
        case nil: throw bad("outcome", "is required: success, failure or cancelled")
        case let other?: throw bad("outcome", "\"\(other)\" is not success, failure or cancelled")
        }
        if case .failure(let kind) = expectation.outcome, !isFailureKind(kind) {
            throw bad("failure", "\"\(kind)\" is not http-NNN, too-many-redirects or any")
        }
        if members["failure"] != nil, expectation.outcome != .failure(kind: try string("failure") ?? "") {
            throw bad("failure", "requires \"outcome\": \"failure\"")
        }
        expectation.version = try integer("version", minimum: 1)
        if let digest = try string("sha256") {
            guard digest.count == 64, digest.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
                throw bad("sha256", "must be 64 lower-case hex digits")
            }
            expectation.sha256 = digest
        }
        if (expectation.version != nil || expectation.sha256 != nil) && expectation.outcome != .success {
            throw bad(expectation.version != nil ? "version" : "sha256", "requires \"outcome\": \"success\"")
        }
        if let files = members["files"] {
            guard case .array(let items) = files, !items.isEmpty else {
                throw bad("files", "must be a non-empty array of route names")
            }
            for item in items {
                guard case .string(let route) = item, !route.isEmpty else {
                    throw bad("files", "must be a non-empty array of route names")
                }
                expectation.files.append(route)
            }
        }
        expectation.concurrency = try integer("concurrency", minimum: 1)
        expectation.maxRefetched = try size("max-refetched")
        expectation.maxRequests = try integer("max-requests", minimum: 1)
        if let text = try string("resume-range") {
            guard let rule = RangeRule(rawValue: text) else {
                throw bad("resume-range", "\"\(text)\" is not any, exact, at-most or forbidden")
            }
            expectation.range = rule
        }
        if let text = try string("if-range") {
            guard let rule = IfRangeRule(rawValue: text) else {
                throw bad("if-range", "\"\(text)\" is not any, etag or last-modified")
            }
            expectation.ifRange = rule
        }
        expectation.minElapsed = try duration("min-elapsed", members["min-elapsed"])
        expectation.maxElapsed = try duration("max-elapsed", members["max-elapsed"])
        expectation.maxConnections = try integer("max-connections", minimum: 1)
        if let flag = members["leaves-no-output"] {
            guard case .bool(let value) = flag else { throw bad("leaves-no-output", "must be true or false") }
            expectation.leavesNoOutput = value
        } else {
            expectation.leavesNoOutput = expectation.outcome == .cancelled
        }
        if let tags = members["tags"] {
            guard case .array(let items) = tags else { throw bad("tags", "must be an array of strings") }
            for item in items {
                guard case .string(let tag) = item else { throw bad("tags", "must be an array of strings") }
                expectation.tags.insert(tag)
            }
        }
        if let steps = members["steps"] {
            guard case .array(let items) = steps else { throw bad("steps", "must be an array of step objects") }
            for (index, item) in items.enumerated() {
                expectation.steps.append(try parseStep(item, key: "steps[\(index)]", bad: bad, duration: duration))
            }
        }
        if case .cancelled = expectation.outcome,
            !expectation.steps.contains(where: { if case .cancel = $0 { true } else { false } })
        {
            throw bad("outcome", "\"cancelled\" requires a cancel-at step")
        }
        return expectation
    }

    private static func parseStep(
        _ item: JSONValue, key: String, bad: (String, String) -> ConformanceError,
        duration: (String, JSONValue?) throws(ConformanceError) -> Duration?
    ) throws(ConformanceError) -> Step {
        let stepKeys = ["kill-at", "pause-at", "pause-for", "cancel-at", "prefill"]
        guard let members = item.objectValue else { throw bad(key, "must be an object") }
        for name in members.keys.sorted() where !stepKeys.contains(name) {
            throw bad(key, "unknown key \"\(name)\" (expected one of: \(stepKeys.joined(separator: ", ")))")
        }
        let actions = members.keys.filter { $0 != "pause-for" }
        guard actions.count == 1, let action = actions.first else {
            throw bad(key, "must have exactly one of kill-at, pause-at, cancel-at, prefill")
        }
        guard case .string(let text) = members[action]!, let threshold = parseThreshold(text) else {
            throw bad("\(key).\(action)", "must be a size like 1M or a percentage like 25%")
        }
        if action != "pause-at", members["pause-for"] != nil { throw bad(key, "pause-for requires pause-at") }
        switch action {
        case "kill-at": return .killAndRestart(at: threshold)
        case "pause-at":
            return .pause(at: threshold, for: try duration("\(key).pause-for", members["pause-for"]) ?? .seconds(1))
        case "cancel-at": return .cancel(at: threshold)
        default: return .prefill(threshold)
        }
    }

    /// Parses `25%` or a size such as `1M`.
    ///
    /// - Parameters:
    ///   - text: the threshold as written.
    /// - Returns: the threshold, or nil when malformed or above 100%.
    public static func parseThreshold(_ text: String) -> Threshold? {
        if text.hasSuffix("%") {
            guard let percent = Double(text.dropLast()), percent >= 0, percent <= 100 else { return nil }
            return .percent(percent)
        }
        return ByteSize.parse(text).map { .bytes($0) }
    }

    /// Whether `kind` names a failure the judge can recognise.
    ///
    /// - Parameters:
    ///   - kind: `http-NNN`, `too-many-redirects` or `any`.
    /// - Returns: true when recognised.
    public static func isFailureKind(_ kind: String) -> Bool {
        if kind == "any" || kind == "too-many-redirects" { return true }
        guard kind.hasPrefix("http-"), let code = Int(kind.dropFirst(5)) else { return false }
        return (400...599).contains(code)
    }
}
