import RangeServer

/// Where each part of an output file came from: a known version of the resource, or nothing known.
public struct ContentSegment: Hashable, Sendable, Codable {
    /// The byte offsets in the output.
    public var range: Range<UInt64>
    /// The resource version these bytes equal, or nil when they match none.
    public var version: Int?

    /// Makes a segment.
    ///
    /// - Parameters:
    ///   - range: the offsets.
    ///   - version: the matching version, if any.
    public init(range: Range<UInt64>, version: Int?) {
        self.range = range
        self.version = version
    }

    /// Adds the bytes at `range` (right after the last segment's) to `segments`, extending the last segment when
    /// it holds the same version.
    ///
    /// - Parameters:
    ///   - range: the offsets.
    ///   - version: the version they match, if any.
    ///   - segments: the segments so far, in order.
    static func append(_ range: Range<UInt64>, version: Int?, to segments: inout [ContentSegment]) {
        if let last = segments.last, last.version == version, last.range.upperBound == range.lowerBound {
            segments[segments.count - 1].range = last.range.lowerBound..<range.upperBound
        } else {
            segments.append(ContentSegment(range: range, version: version))
        }
    }
}

/// What the harness found in one output file after the run.
public struct OutputFacts: Hashable, Sendable {
    /// The file's name, for messages.
    public var name: String
    /// Whether the file exists.
    public var exists: Bool
    /// Its size in bytes (0 when missing).
    public var size: UInt64
    /// Its SHA-256 in lower-case hex, when computed (only when the expectation names a digest).
    public var sha256: String?
    /// The file split into runs by matching version, in order; empty when missing or empty.
    public var segments: [ContentSegment]

    /// Makes the facts of one file.
    ///
    /// - Parameters:
    ///   - name: the file name.
    ///   - exists: whether it exists.
    ///   - size: its size.
    ///   - sha256: its digest, if computed.
    ///   - segments: where its bytes came from.
    public init(name: String, exists: Bool, size: UInt64, sha256: String? = nil, segments: [ContentSegment] = []) {
        self.name = name
        self.exists = exists
        self.size = size
        self.sha256 = sha256
        self.segments = segments
    }

    /// A missing file.
    ///
    /// - Parameters:
    ///   - name: the file name.
    /// - Returns: the facts.
    public static func missing(_ name: String) -> OutputFacts { OutputFacts(name: name, exists: false, size: 0) }
}

/// Everything the judge needs about one run, gathered by the runner (or fabricated by a test).
public struct RunFacts: Sendable {
    /// The journal entries of the run, in `seq` order.
    public var entries: [JournalEntry]
    /// One per transfer, in the job's order.
    public var outputs: [OutputFacts]
    /// The full length of the resource (each file's length when there are several).
    public var resourceLength: UInt64
    /// The version the output must equal (from the expectation, or the scenario's latest).
    public var expectedVersion: Int
    /// How the client said it ended.
    public var exit: ClientExit
    /// From the first start to the exit.
    public var elapsed: Duration
    /// The most established connections to the server seen by sampling, if sampled.
    public var observedPeakConnections: Int?
    /// Bytes the harness wrote into the output before starting (a `prefill` step).
    public var prefilledBytes: UInt64
    /// Whether the client fetches segments over several connections (judged by the segment rule).
    public var segmented: Bool
    /// Every start of the client program, in order (empty for an in-process client, or when not known): the first,
    /// each step's restart, and each harness re-run. Requests are attributed to them by arrival time.
    public var launches: [ClientLaunch]
    /// For a `disk-full-at` row: how the first start ended on the full filesystem and what it left; nil otherwise.
    public var diskFull: DiskFull?
    /// For a `dead-ipv6` row: how many connects to the dead `[::1]` the harness saw; nil when not counted.
    public var ipv6Attempts: Int?
    /// For a row whose client names its output from the server (`output-names`): which file is the output (also
    /// ``outputs``' only element) and what else the client left in its directory; nil otherwise.
    package var serverNamed: ServerNamedOutput?

    /// The first start of a `disk-full-at` row, on a filesystem with ``size`` bytes of room.
    public struct DiskFull: Hashable, Sendable {
        /// The filesystem's size.
        public var size: UInt64
        /// How the client said that start ended (a conforming one reports failure).
        public var exit: ClientExit
        /// The outputs as it left them, one per transfer (what a resume builds on must be a correct prefix); nil
        /// when not seen: a remote tester reports only how the start ended (`disk-full-outcome`), and what it left is
        /// judged through the requests of the start after it.
        public var outputs: [OutputFacts]?

        /// Makes the facts.
        ///
        /// - Parameters:
        ///   - size: the filesystem's size.
        ///   - exit: how the start ended.
        ///   - outputs: the outputs it left; nil when not seen.
        public init(size: UInt64, exit: ClientExit, outputs: [OutputFacts]?) {
            self.size = size
            self.exit = exit
            self.outputs = outputs
        }
    }

    /// Makes the facts of a run.
    ///
    /// - Parameters:
    ///   - entries: the run's journal entries.
    ///   - outputs: the output files' facts.
    ///   - resourceLength: the resource's length.
    ///   - expectedVersion: the version the output must equal.
    ///   - exit: how the client ended.
    ///   - elapsed: how long the run took.
    ///   - observedPeakConnections: the sampled peak of connections.
    ///   - prefilledBytes: bytes prefilled before the start.
    ///   - segmented: whether the client fetches one file over several connections.
    ///   - launches: every start of the client program, in order.
    public init(
        entries: [JournalEntry], outputs: [OutputFacts], resourceLength: UInt64, expectedVersion: Int,
        exit: ClientExit, elapsed: Duration, observedPeakConnections: Int? = nil, prefilledBytes: UInt64 = 0,
        segmented: Bool = false, launches: [ClientLaunch] = []
    ) {
        self.entries = entries
        self.outputs = outputs
        self.resourceLength = resourceLength
        self.expectedVersion = expectedVersion
        self.exit = exit
        self.elapsed = elapsed
        self.observedPeakConnections = observedPeakConnections
        self.prefilledBytes = prefilledBytes
        self.segmented = segmented
        self.launches = launches
    }
}
