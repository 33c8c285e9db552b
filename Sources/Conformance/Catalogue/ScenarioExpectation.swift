import RangeServer

/// What a conforming client must do in one scenario: the `expect` object of a scenario file.
///
/// Every key is optional except `outcome`; see `fixtures/scenarios/schema.json` (`$defs.expect`) and
/// `docs/conformance.md` for the format. Decoding is strict: an unknown key or a bad value is an error that
/// names the file, the line and column, and the key (`ScenarioExpectation+Decoding.swift`).
public struct ScenarioExpectation: Hashable, Sendable {
    /// How the download must end.
    public enum Outcome: Hashable, Sendable {
        /// The client reports success and every output equals the expected bytes.
        case success
        /// The client reports failure; `kind` (`http-404`, `too-many-redirects`, `tls`, `any`) is judged from the
        /// journal. `tls`: the run's last response redirected to `https:`, so the client failed at the TLS listener
        /// it was sent to, not on its way there.
        case failure(kind: String)
        /// The client reports the download as cancelled (after a `cancel-at` step).
        case cancelled
        /// Either `success`, or a reported failure that leaves no output holding bytes other than the expected
        /// ones: for a response a client may decode or refuse, never save as it is (`encoding=gzip-always`).
        case intact
    }

    /// Where a resumed request must start.
    public enum RangeRule: String, Hashable, Sendable, CaseIterable {
        /// No rule on where a resume starts.
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

        /// The threshold as a scenario writes it: `25%`, `1M`.
        public var text: String {
            switch self {
            case .bytes(let count): ByteSize.format(count)
            case .percent(let percent): percent == percent.rounded() ? "\(Int(percent))%" : "\(percent)%"
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
        /// Run the client with its output and state directories on a filesystem with only this much room (a
        /// size-capped tmpfs), then, once it has ended, give the filesystem room and run the same command again. A
        /// size, never a percentage: it is the filesystem's size.
        case diskFull(at: UInt64)

        /// The capability a client needs to perform this step: none for `disk-full-at`, which the harness does to
        /// the client's world (every client can be started twice on the same job).
        public var capability: ClientCapabilities {
            switch self {
            case .killAndRestart: .killAndRestart
            case .pause: .pauseAndResume
            case .cancel: .cancel
            case .prefill: .prefilledOutput
            case .diskFull: []
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
    /// Where the client is sent: the server (the default), its blackhole listener, whose connects never complete, or
    /// a name whose IPv6 address is dead and whose IPv4 address serves (`dead-ipv6`).
    public var entry: Entry = .server
    /// The connect timeout clients are configured with where they take one; nil: the harness's (5 s).
    public var connectTimeout: Duration?
    /// The retries clients are configured with where they take a number; nil: each client's own setting.
    public var retries: Int?
    /// The `Authorization` value clients are configured to send, as their users configure a token (`authorization`):
    /// a row whose redirect leaves the origin sees whether they forward it there. Clients that cannot be given one
    /// are n/a.
    public var authorization: String?
    /// The names a client may save the download under when it takes the name from the server (`output-names`): the
    /// `Content-Disposition` file names the row's attempts give, in order. Set, the client is given a directory and no
    /// name, and the judge looks for the output there; clients that cannot name their output from the server are n/a.
    public var outputNames: [String]?

    /// Where a scenario's URL points.
    public enum Entry: String, Hashable, Sendable {
        /// The scenario URL on the server.
        case server
        /// The same path on the server's blackhole listener: a connect that never completes.
        case blackhole
        /// The same path on ``ClientWorld/dualStackName``, which resolves to `::1` first and `127.0.0.1` second (in
        /// the harness's private mount namespace): `[::1]` at the server's port is a listener that never accepts,
        /// `127.0.0.1` is the server. A client must fall back to IPv4 (or race the two, RFC 8305).
        case deadIPv6 = "dead-ipv6"
    }

    /// The `disk-full-at` step's size, when the scenario has one.
    public var diskFullSize: UInt64? {
        for case .diskFull(let size) in steps { return size }
        return nil
    }

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
        if authorization != nil { needed.insert(.authorization) }
        if outputNames != nil { needed.insert(.serverNamedOutput) }
        return needed
    }

    /// The keys an `expect` object may have.
    public static let keys = Key.allCases.map(\.rawValue)

    /// Reads a scenario's `expect` section.
    ///
    /// - Parameters:
    ///   - section: the scenario's `expect` section; nil (no section) is an error, since every catalogue
    ///     scenario must say what passing means.
    ///   - scenario: the scenario name, for the message about a missing section.
    /// - Returns: the expectation.
    /// - Throws: `ConformanceError.invalidExpectation` as `FILE:LINE:COLUMN: expect.KEY: reason`.
    public static func parse(
        _ section: ScenarioSection?, scenario: String
    ) throws(ConformanceError)
        -> ScenarioExpectation
    {
        guard let section else { throw .invalidExpectation("\(scenario): no expect section") }
        do {
            return try section.decode(ScenarioExpectation.self)
        } catch {
            throw .invalidExpectation(error.message)
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
    ///   - kind: `http-NNN`, `too-many-redirects`, `tls` or `any`.
    /// - Returns: true when recognised.
    public static func isFailureKind(_ kind: String) -> Bool {
        if kind == "any" || kind == "too-many-redirects" || kind == "tls" { return true }
        guard kind.hasPrefix("http-"), let code = Int(kind.dropFirst(5)) else { return false }
        return (400...599).contains(code)
    }
}
