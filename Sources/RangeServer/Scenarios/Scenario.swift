/// A scripted download: what each successive attempt at a URL gets, per route.
///
/// A scenario is loaded from `fixtures/scenarios/NAME.json` (see `Scenario+Loading.swift` and
/// `schema.json`). Each route counts its own attempts (per scenario run, see `ScenarioCounters`),
/// and attempt *k* gets `step(forAttempt: k)`. Route `""` is the scenario's own URL; other routes
/// are targets of redirects, for example short-lived signed URLs.
public struct Scenario: Hashable, Sendable {
    /// The route name of the scenario's own URL (the top-level `attempts`).
    public static let mainRoute = ""

    /// The file name without `.json`.
    public var name: String
    /// What the scenario exercises, for people and reports.
    public var description: String
    /// The resource every route serves unless it names its own, e.g. `/bytes/8M?seed=7`.
    public var resource: String
    /// The routes by name; `mainRoute` (`""`) always exists.
    public var routes: [String: Route]
    /// The conformance harness's expectations, kept as parsed for the harness to decode; always an object when
    /// present.
    public var expect: ScenarioSection?
    /// Whether a response the client left of its own accord (`JournalEntry.abandoned`: a probe that read the first
    /// bytes and closed) spends its attempt here as any request does (`"count-probes": true`). By default it does
    /// not: its attempt is given back, so the client's next request meets the step the probe met. For rows whose
    /// point is counting every request: redirect loops, retry bursts.
    public var countsProbes = false
    /// The RFC sections the row rests on (`"rfc"`), or why none does; nil when the file has no `rfc` key. The server
    /// only checks its form; the conformance harness requires it of every row and shows it in its reports.
    public var rfc: ScenarioCitations?
    /// Public reports of the row's failure in real clients (`"seen-in"`), or why there are none; nil when the file
    /// has no `seen-in` key. Like ``rfc``, for the harness's reports.
    public var seenIn: ScenarioCitations?

    /// Makes a scenario from parts, without the loader's validation.
    ///
    /// - Parameters:
    ///   - name: the scenario name.
    ///   - description: what it exercises.
    ///   - resource: the default resource for all routes.
    ///   - routes: the routes by name; include `mainRoute`.
    ///   - expect: the harness's expectations, if any.
    public init(
        name: String, description: String, resource: String, routes: [String: Route], expect: ScenarioSection? = nil
    ) {
        self.name = name
        self.description = description
        self.resource = resource
        self.routes = routes
        self.expect = expect
    }

    /// The prefix of a redirect step that sends the client to the blackhole listener (`blackhole:/bytes/4M`).
    public static let blackholePrefix = "blackhole:"

    /// Whether a step of any route redirects to the blackhole listener, which the server then opens.
    public var redirectsToBlackhole: Bool {
        redirectListeners.contains(.blackhole)
    }

    /// The other listeners this scenario's redirect steps send clients to (`blackhole:`, `http:`, `https:`,
    /// `tls:FAULT:`), which the server opens when it loads the scenario.
    public var redirectListeners: Set<ScenarioRedirect.Kind> {
        var kinds: Set<ScenarioRedirect.Kind> = []
        for route in routes.values {
            for step in route.attempts {
                if let redirect = step.redirect.flatMap(ScenarioRedirect.init) { kinds.insert(redirect.kind) }
            }
        }
        return kinds
    }

    /// One URL's script: the resource it serves and what each attempt at it gets.
    public struct Route: Hashable, Sendable {
        /// The resource this route serves, e.g. `/bytes/8M?seed=7`.
        public var resource: String
        /// The steps for attempts 1, 2, …; attempts past the end reuse the last step.
        public var attempts: [ScenarioStep]

        /// Makes a route.
        ///
        /// - Parameters:
        ///   - resource: the resource it serves.
        ///   - attempts: the steps for attempts 1, 2, ….
        public init(resource: String, attempts: [ScenarioStep]) {
            self.resource = resource
            self.attempts = attempts
        }

        /// The step for one attempt.
        ///
        /// - Parameters:
        ///   - k: the 1-based attempt number; values below 1 are treated as 1.
        /// - Returns: `attempts[k - 1]`, the last step when `k` is past the end (so the final
        ///   behaviour persists, typically success), or a plain step when there are no attempts.
        public func step(forAttempt k: Int) -> ScenarioStep {
            guard !attempts.isEmpty else { return ScenarioStep() }
            return attempts[min(max(k, 1), attempts.count) - 1]
        }

        /// The resource version in effect for one attempt.
        ///
        /// A step's `version` changes the resource from that attempt on, so the version in effect is
        /// the latest one set at or before attempt `k`.
        ///
        /// - Parameters:
        ///   - k: the 1-based attempt number; values below 1 are treated as 1.
        ///   - base: the version when no step has set one yet (from the resource URL, usually 1).
        /// - Returns: the version to serve.
        public func effectiveVersion(forAttempt k: Int, base: Int) -> Int {
            let upTo = min(max(k, 1), attempts.count)
            return attempts.prefix(upTo).last(where: { $0.version != nil })?.version ?? base
        }

        /// The length in bytes of the representation for one attempt, when a step has set one.
        ///
        /// Like `version`, a step's `size` holds from that attempt on: the latest one set at or before attempt `k`.
        ///
        /// - Parameters:
        ///   - k: the 1-based attempt number; values below 1 are treated as 1.
        /// - Returns: the size to serve, or nil for the resource's own.
        public func effectiveSize(forAttempt k: Int) -> UInt64? {
            let upTo = min(max(k, 1), attempts.count)
            return attempts.prefix(upTo).last(where: { $0.size != nil })?.size
        }
    }

    /// The route with this name, or `nil`.
    ///
    /// - Parameters:
    ///   - name: a route name; `mainRoute` for the scenario's own URL.
    /// - Returns: the route.
    public func route(_ name: String) -> Route? { routes[name] }
}

/// What one attempt at a scenario route gets: faults, a resource version, or a redirect.
public struct ScenarioStep: Hashable, Sendable {
    /// The status a redirect step answers with when it names none.
    public static let defaultRedirectCode = 302
    /// The redirect statuses a step may use.
    public static let redirectCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// The faults to inject; a query's own faults are layered over these with `FaultPlan.merged(over:)`.
    public var faults: FaultPlan
    /// From this attempt on, serve this version of the resource (new bytes, ETag and Last-Modified).
    public var version: Int?
    /// From this attempt on, the representation is this many bytes long (a `/bytes/` resource only): the file shrank
    /// or grew between attempts. Its bytes at each offset stay those of its version.
    public var size: UInt64?
    /// Answer with a redirect to this route name, or to this absolute path when it starts with `/`.
    public var redirect: String?
    /// The redirect status as written; `nil` means `defaultRedirectCode`.
    public var redirectCode: Int?
    /// Makes the redirect's Location absolute with this host and the server's own port, so the client is sent to
    /// another origin of the same server (`localhost` where it asked `127.0.0.1`); `nil` keeps it relative.
    public var redirectHost: String?

    /// Makes a step; with no arguments, a plain step that serves the resource normally.
    ///
    /// - Parameters:
    ///   - faults: the faults to inject.
    ///   - version: the resource version from this attempt on.
    ///   - redirect: a route name or an absolute path to redirect to.
    ///   - redirectCode: the redirect status.
    ///   - redirectHost: the host of an absolute redirect Location, on the server's own port.
    ///   - size: the representation's length from this attempt on.
    public init(
        faults: FaultPlan = FaultPlan(), version: Int? = nil, redirect: String? = nil, redirectCode: Int? = nil,
        redirectHost: String? = nil, size: UInt64? = nil
    ) {
        self.faults = faults
        self.version = version
        self.size = size
        self.redirect = redirect
        self.redirectCode = redirectCode
        self.redirectHost = redirectHost
    }

    /// Whether `host` may be a `redirect-host`: a name or IPv4 address of letters, digits, `.` and `-`, or an IPv6
    /// address in brackets.
    public static func isRedirectHost(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        if bytes.first == UInt8(ascii: "[") {
            return bytes.count > 2 && bytes.last == UInt8(ascii: "]")
                && bytes.dropFirst().dropLast().allSatisfy { $0.isHexDigitOrColonOrDot }
        }
        return bytes.allSatisfy { $0.isHostCharacter } && bytes.first != UInt8(ascii: "-")
    }

    /// Where a redirect step points.
    public enum RedirectTarget: Hashable, Sendable {
        /// Another route of the same scenario (and run), by name.
        case route(String)
        /// An absolute path on this server, such as `/bytes/1M`.
        case path(String)
        /// A path on another listener of this server (`https:/PATH`, `blackhole:/PATH`, ...).
        case listener(ScenarioRedirect)
    }

    /// The redirect target, or `nil` when this step does not redirect.
    public var redirectTarget: RedirectTarget? {
        guard let redirect else { return nil }
        if redirect.hasPrefix("/") { return .path(redirect) }
        return ScenarioRedirect(redirect).map { .listener($0) } ?? .route(redirect)
    }

    /// The redirect status to send: `redirectCode`, or `defaultRedirectCode`.
    public var effectiveRedirectCode: Int { redirectCode ?? Self.defaultRedirectCode }
}

extension UInt8 {
    /// A letter, digit, `.` or `-`.
    fileprivate var isHostCharacter: Bool {
        (self >= 0x30 && self <= 0x39) || (self | 0x20 >= 0x61 && self | 0x20 <= 0x7A) || self == 0x2E || self == 0x2D
    }

    /// A hexadecimal digit, `:` or `.` (an IPv6 address, possibly with an IPv4 tail).
    fileprivate var isHexDigitOrColonOrDot: Bool {
        (self >= 0x30 && self <= 0x39) || (self | 0x20 >= 0x61 && self | 0x20 <= 0x66) || self == 0x3A || self == 0x2E
    }
}
