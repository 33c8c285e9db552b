import RangeServer

/// Everything the picture of one run needs, as plain values: each request in arrival order with the bytes it asked
/// for and the bytes it got, and what each output ended up holding.
///
/// Built by a pure function of the scenario and the run's facts, and `Codable`, so a results file can keep it and a
/// report can be drawn again after a restart without the journal.
public struct RunTrace: Codable, Hashable, Sendable {
    /// The scenario's name.
    public var scenario: String
    /// What the scenario exercises.
    public var description: String
    /// The full length of the resource (of each file, when there are several).
    public var resourceLength: UInt64
    /// Every version the scenario can serve.
    public var versions: [Int]
    /// The version a successful output must equal.
    public var expectedVersion: Int
    /// The requests, in the order the server received them.
    public var requests: [Request]
    /// One per output file, in the job's order.
    public var outputs: [Output]
    /// From the first request's arrival to the last response's end, in milliseconds.
    public var spanMilliseconds: Int64

    /// One request and what the server did with it.
    public struct Request: Codable, Hashable, Sendable {
        /// 1 for the first request of the run to arrive.
        public var order: Int
        /// The server's arrival number (unique while the server runs).
        public var arrival: Int
        /// The connection it came in on; requests on one keep-alive connection share it.
        public var connection: Int
        /// The request method.
        public var method: String
        /// The request target as received.
        public var target: String
        /// The scenario route (`""` for the scenario's own URL), if known.
        public var route: String?
        /// The attempt number at the route, if counted.
        public var attempt: Int?
        /// The response status.
        public var status: Int
        /// The Range header as sent, if any.
        public var rangeHeader: String?
        /// The Range header resolved against the resource's length: one span per range asked for; empty without a
        /// Range header or when it cannot be read.
        public var requested: [ByteSpan]
        /// The If-Range header as sent, if any.
        public var ifRange: String?
        /// The offsets in the resource of the body bytes actually sent: from Content-Range for a 206, from 0 for a
        /// 200; nil when no body bytes were sent or they cannot be placed (a multipart 206).
        public var sent: ByteSpan?
        /// The body bytes the response planned to send.
        public var bodyBytesPlanned: UInt64
        /// The body bytes actually handed to the connection.
        public var bodyBytesSent: UInt64
        /// The parts of `sent` that the server had already sent in this run, of the same file and representation.
        public var sentTwice: [ByteSpan]
        /// How the response ended.
        public var outcome: JournalOutcome
        /// The faults applied, in canonical `key=value` form.
        public var faults: [String]
        /// When the request arrived, in milliseconds after the run's first arrival.
        public var startMilliseconds: Int64
        /// When the response ended, in milliseconds after the run's first arrival.
        public var endMilliseconds: Int64
        /// The response's ETag, else its Last-Modified: the validator a client would resume with.
        public var validator: String?
        /// The resource version the response served, when it can be told (see ``RunTrace/servedVersion(_:in:)``).
        public var version: Int?
        /// The response's Content-Encoding, if any: then `sent` counts encoded bytes, not the resource's offsets.
        public var contentEncoding: String?
        /// A redirect's Location, if any.
        public var location: String?
        /// Which start of the client made it, 1 for the first (``RunFacts/launches``); nil when not known (a client
        /// run in process, a run reported to the service).
        public var launch: Int? = nil
        /// True when that start was a harness re-run, whose requests no bound counts; nil otherwise.
        public var byHarnessRerun: Bool? = nil

        /// `2 (harness re-run)`, `1`, or empty when not known: the launch, for the picture and the request table.
        public var launchLabel: String {
            guard let launch else { return "" }
            return byHarnessRerun == true ? "\(launch) (harness re-run)" : "\(launch)"
        }

        /// Whether the response is a redirect with a Location: a hop.
        public var isRedirect: Bool { (300...399).contains(status) && location != nil }
    }

    /// What one output file holds.
    public struct Output: Codable, Hashable, Sendable {
        /// The file's name.
        public var name: String
        /// Whether the file exists.
        public var exists: Bool
        /// Its size in bytes.
        public var size: UInt64
        /// The file split into runs by matching version, in order.
        public var segments: [ContentSegment]

        /// Makes the picture's view of one output.
        ///
        /// - Parameters:
        ///   - name: the file's name.
        ///   - exists: whether it exists.
        ///   - size: its size.
        ///   - segments: which version each part holds.
        public init(name: String, exists: Bool, size: UInt64, segments: [ContentSegment]) {
            self.name = name
            self.exists = exists
            self.size = size
            self.segments = segments
        }

        /// The offsets where one segment ends and a segment of another version (or of none) begins.
        public var splices: [UInt64] {
            zip(segments, segments.dropFirst()).compactMap { left, right in
                left.version != right.version ? right.range.lowerBound : nil
            }
        }
    }

    /// Makes a trace from parts.
    ///
    /// - Parameters:
    ///   - scenario: the scenario's name.
    ///   - description: what it exercises.
    ///   - resourceLength: the resource's length.
    ///   - versions: the versions it can serve.
    ///   - expectedVersion: the version the output must equal.
    ///   - requests: the requests in arrival order.
    ///   - outputs: the outputs.
    ///   - spanMilliseconds: from the first arrival to the last end.
    public init(
        scenario: String, description: String, resourceLength: UInt64, versions: [Int], expectedVersion: Int,
        requests: [Request], outputs: [Output], spanMilliseconds: Int64
    ) {
        self.scenario = scenario
        self.description = description
        self.resourceLength = resourceLength
        self.versions = versions
        self.expectedVersion = expectedVersion
        self.requests = requests
        self.outputs = outputs
        self.spanMilliseconds = spanMilliseconds
    }

    /// Reads a run's journal and outputs into a trace.
    ///
    /// Requests are ordered by `arrival`, not `seq`: the journal records a response when it ends, so a dropped or
    /// stalled response can be journalled after its own resume. Bytes sent twice are counted per file (route, when
    /// the scenario downloads several) and per representation (version, else validator), as the judge counts them.
    ///
    /// - Parameters:
    ///   - entry: the scenario.
    ///   - facts: what happened in the run.
    public init(entry: CatalogueEntry, facts: RunFacts) {
        let ordered = facts.entries.sorted { ($0.arrival, $0.seq) < ($1.arrival, $1.seq) }
        let times = ordered.flatMap { [Self.milliseconds($0.arrivalTime), Self.milliseconds($0.time)] }.compactMap {
            $0
        }
        let origin = times.min() ?? 0
        let severalFiles = entry.expectation.files.count > 1
        let length = entry.reference.length
        // What the server has sent so far, by file and representation.
        var sentSoFar: [String: [Range<UInt64>]] = [:]
        var requests: [Request] = []
        for (index, journal) in ordered.enumerated() {
            let headers = journal.responseHeaders
            let validator = headers["etag"] ?? headers["last-modified"]
            let version = Self.servedVersion(journal, in: entry)
            let encoding = headers["content-encoding"].flatMap { $0 == "identity" ? nil : $0 }
            let sent = Self.sentSpan(
                status: journal.status, contentRange: headers["content-range"], bytesSent: journal.bodyBytesSent)
            var twice: [ByteSpan] = []
            if let sent {
                let representation = version.map { "v\($0)" } ?? "validator \(validator ?? "-")"
                let key =
                    (severalFiles ? journal.route ?? "" : "") + "|" + representation + "|" + (encoding ?? "")
                let earlier = sentSoFar[key] ?? []
                twice = Self.intersections(sent.range, earlier).map(ByteSpan.init)
                sentSoFar[key] = JournalAnalysis.union(earlier, sent.range)
            }
            let start = Self.milliseconds(journal.arrivalTime).map { $0 - origin } ?? 0
            let end = Self.milliseconds(journal.time).map { $0 - origin } ?? start
            requests.append(
                Request(
                    order: index + 1, arrival: journal.arrival, connection: journal.connection, method: journal.method,
                    target: journal.target, route: journal.route, attempt: journal.attempt, status: journal.status,
                    rangeHeader: journal.requestHeaders["range"],
                    requested: journal.requestHeaders["range"].map { ByteSpan.requested(by: $0, length: length) } ?? [],
                    ifRange: journal.requestHeaders["if-range"], sent: sent,
                    bodyBytesPlanned: journal.bodyBytesPlanned, bodyBytesSent: journal.bodyBytesSent,
                    sentTwice: twice, outcome: journal.outcome, faults: journal.faults, startMilliseconds: start,
                    endMilliseconds: end, validator: validator, version: version, contentEncoding: encoding,
                    location: (300...399).contains(journal.status) ? headers["location"] : nil,
                    launch: facts.launchIndex(of: journal).map { $0 + 1 },
                    byHarnessRerun: facts.isHarnessRerun(journal) ? true : nil))
        }
        self.init(
            scenario: entry.name, description: entry.scenario.description, resourceLength: length,
            versions: entry.versions, expectedVersion: entry.expectedVersion, requests: requests,
            outputs: facts.outputs.map {
                Output(name: $0.name, exists: $0.exists, size: $0.size, segments: $0.segments)
            },
            spanMilliseconds: (times.max() ?? origin) - origin)
    }

    /// The version of the resource a response served, when it can be told.
    ///
    /// The scenario decides it: the step of the route's attempt sets the version (a `version` step, else the
    /// version the route's resource names, else 1), whatever the validator faults did to the ETag (`etag-salt`
    /// changes the ETag, not the bytes). Without a route and attempt, the server's own ETag of a generated resource
    /// (`"b<length>-<seed>-v<version>"`) tells it; with a single version, that one. Only 200, 206, 304 and 416
    /// answers speak of the representation: redirects and errors have no version.
    ///
    /// - Parameters:
    ///   - journal: the journal entry.
    ///   - entry: the scenario.
    /// - Returns: the version, or nil.
    static func servedVersion(_ journal: JournalEntry, in entry: CatalogueEntry) -> Int? {
        guard [200, 206, 304, 416].contains(journal.status) else { return nil }
        if let routeName = journal.route, let attempt = journal.attempt, let route = entry.scenario.routes[routeName] {
            let stepped = route.effectiveVersion(forAttempt: attempt, base: 0)
            return stepped > 0 ? stepped : resourceVersion(route.resource)
        }
        if let etag = journal.responseHeaders["etag"], let version = generatedVersion(etag: etag) { return version }
        return entry.versions.count == 1 ? entry.versions.first : nil
    }

    /// The `version=` a resource path names, 1 when it names none (as the server reads it).
    static func resourceVersion(_ resource: String) -> Int {
        guard let query = resource.split(separator: "?", maxSplits: 1).dropFirst().first else { return 1 }
        for pair in query.split(separator: "&") where pair.hasPrefix("version=") {
            if let version = Int(pair.dropFirst("version=".count)) { return version }
        }
        return 1
    }

    /// The version in a generated resource's ETag, `"b400000-b-v2"` (weak or salted: `W/"b400000-b-v2-edge"`).
    static func generatedVersion(etag: String) -> Int? {
        let opaque = etag.hasPrefix("W/") ? etag.dropFirst(2) : etag[...]
        let parts = opaque.drop { $0 == "\"" }.split(separator: "-")
        guard parts.count >= 3, parts[0].hasPrefix("b"), parts[2].hasPrefix("v") else { return nil }
        return Int(parts[2].dropFirst().prefix { $0 != "\"" })
    }

    /// Where a response's body bytes sit in the resource: Content-Range's first offset for a 206, 0 for a 200.
    static func sentSpan(status: Int, contentRange: String?, bytesSent: UInt64) -> ByteSpan? {
        guard bytesSent > 0 else { return nil }
        switch status {
        case 200: return ByteSpan(0..<bytesSent)
        case 206:
            guard let start = contentRange.flatMap(JournalAnalysis.contentRangeStart) else { return nil }
            return ByteSpan(start..<(start + bytesSent))
        default: return nil
        }
    }

    /// The parts of `range` inside the sorted, disjoint `ranges`.
    static func intersections(_ range: Range<UInt64>, _ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        ranges.compactMap { existing in
            let low = max(range.lowerBound, existing.lowerBound)
            let high = min(range.upperBound, existing.upperBound)
            return high > low ? low..<high : nil
        }
    }

    /// Milliseconds since 1970 of a journal timestamp.
    static func milliseconds(_ timestamp: String) -> Int64? { JournalAnalysis.milliseconds(timestamp) }
}
