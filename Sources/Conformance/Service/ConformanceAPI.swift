import Foundation

/// The JSON bodies of `rangecheck serve`'s API under `/_conformance/` (docs/conformance-api.json describes them).
///
/// Keys are spelled as on the wire (`steps-done`), so a client in any language reads the same names the document
/// shows.
package enum ConformanceAPI {
    /// `POST /_conformance/runs`: a client asks for a run of one scenario.
    public struct RunRequest: Codable, Sendable {
        /// The scenario's name.
        public var scenario: String
        /// The column the verdict goes under: the client's name and, if it matters, its version or platform.
        public var client: String
        /// `http` (the default) or `https`.
        public var scheme: String?
        /// Whether the client fetches one file over several connections (judged by the segment rule, which allows
        /// requests of one file in flight together); absent means no.
        public var segmented: Bool?

        /// Makes a request.
        public init(scenario: String, client: String, scheme: String? = nil, segmented: Bool? = nil) {
            self.scenario = scenario
            self.client = client
            self.scheme = scheme
            self.segmented = segmented
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case scenario, client, scheme, segmented
        }

        /// Decodes a request, refusing members the API document does not name and null values.
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownMembers(CodingKeys.self)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            scenario = try container.decode(String.self, forKey: .scenario)
            client = try container.decode(String.self, forKey: .client)
            scheme = try container.decodeIfPresent(String.self, forKey: .scheme)
            segmented = try container.decodeIfPresent(Bool.self, forKey: .segmented)
        }
    }

    /// The longest client label, in Unicode code points (what JSON Schema's `maxLength` counts).
    public static let labelLimit = 100

    /// Nil when `label` is a usable client label, otherwise why not: 1 to ``labelLimit`` code points, none of them a
    /// control character (U+0000-U+001F, U+007F-U+009F) or a line or paragraph separator (U+2028, U+2029), and no
    /// space at either end. A label is a column of the report, shown on a page and in a terminal as it is.
    ///
    /// - Parameters:
    ///   - label: the label.
    /// - Returns: one line, or nil.
    public static func labelProblem(_ label: String) -> String? {
        let scalars = label.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= labelLimit else {
            return "a label of 1 to \(labelLimit) characters is required, got \(scalars.count)"
        }
        if let control = scalars.first(where: isControl) {
            let code = String(control.value, radix: 16, uppercase: true)
            return "control character U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code) in the label"
        }
        if scalars.first == " " || scalars.last == " " { return "the label starts or ends with a space" }
        return nil
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// One URL to download, and the route it stands for (empty for a single-file scenario).
    public struct HandedURL: Codable, Sendable, Hashable {
        /// The route name, as the result must name its output.
        public var route: String
        /// The absolute URL.
        public var url: String
    }

    /// A step the client performs itself while it downloads, as the API hands it out.
    ///
    /// Exactly one of `kill-at`, `pause-at`, `cancel-at`, `prefill` and `disk-full-at` is set, with the threshold as
    /// the scenario wrote it (`25%`, `1M`); `bytes` is that threshold in bytes of all outputs together, as they count
    /// on disk (for `disk-full-at`, the room of the filesystem the outputs and the client's state are on).
    public struct StepSpec: Codable, Sendable, Hashable {
        /// Stop the download process abruptly once this much is on disk, then start it again.
        public var killAt: String?
        /// Pause the download once this much is on disk, for `for`, then let it go on.
        public var pauseAt: String?
        /// With `pause-at`: how long the pause lasts (`2s`).
        public var pauseFor: String?
        /// Cancel the download once this much is on disk (the outcome to report is `cancelled`).
        public var cancelAt: String?
        /// Before starting, put this much of the expected content at the start of each output.
        public var prefill: String?
        /// The threshold in bytes.
        public var bytes: UInt64
        /// With `prefill`: where to fetch the bytes to put in place, per route (not a download under test; it is not
        /// journaled).
        public var urls: [HandedURL]?
        /// Run the client with its outputs and state on a filesystem with only this much room; once it has ended, give
        /// the filesystem room and run the same download again (report the first run's outcome as
        /// `disk-full-outcome`).
        public var diskFullAt: String?

        /// The step's name, as `steps-done` lists it.
        public var name: String {
            if killAt != nil { return "kill-at" }
            if pauseAt != nil { return "pause-at" }
            if cancelAt != nil { return "cancel-at" }
            if diskFullAt != nil { return "disk-full-at" }
            return "prefill"
        }

        enum CodingKeys: String, CodingKey {
            case killAt = "kill-at"
            case pauseAt = "pause-at"
            case pauseFor = "for"
            case cancelAt = "cancel-at"
            case diskFullAt = "disk-full-at"
            case prefill, bytes, urls
        }
    }

    /// `201` to `POST /_conformance/runs`.
    public struct RunCreated: Codable, Sendable {
        /// The run token: it names the run in its URLs and in `POST /_conformance/runs/{run}/result`.
        public var run: String
        /// The scenario.
        public var scenario: String
        /// The client label.
        public var client: String
        /// `http` or `https`.
        public var scheme: String
        /// What to download: one URL per output.
        public var urls: [HandedURL]
        /// What to do meanwhile, in order.
        public var steps: [StepSpec]
        /// The CA certificate (PEM) an https run's client must trust; absent for http.
        public var ca: String?
        /// The `Authorization` value the client must send with its requests, as its users configure a token; absent
        /// for rows without one (a row whose redirect leaves the origin sees whether the client forwards it there).
        public var authorization: String?
        /// For a row whose client names its file from the server's `Content-Disposition`: the names it may end under.
        /// The client is to be given a directory, not a name, and every file it leaves there is reported with its
        /// `name`. Absent for other rows.
        public var outputNames: [String]?
        /// Where to report the result.
        public var result: String

        enum CodingKeys: String, CodingKey {
            case run, scenario, client, scheme, urls, steps, ca, authorization, result
            case outputNames = "output-names"
        }
    }

    /// One output file as the client found it after the run.
    public struct ReportedOutput: Codable, Sendable, Hashable {
        /// The route of the URL it was downloaded from (empty for a single-file scenario).
        public var route: String
        /// Whether the file exists; absent means it does (a missing file is reported with `exists: false`).
        public var exists: Bool?
        /// Its size in bytes.
        public var size: UInt64?
        /// Its SHA-256, lower-case hex.
        public var sha256: String?
        /// The SHA-256 of each 64 KiB block, in order (the last may be shorter), lower-case hex: the judge tells
        /// from them which version each part holds.
        public var blocks: [String]?
        /// The file's name, for a row whose client names its file from the server (``RunCreated/outputNames``): every
        /// file left in the directory is reported, each with its name. Absent otherwise.
        public var name: String?

        /// Makes an output.
        public init(
            route: String, exists: Bool? = nil, size: UInt64? = nil, sha256: String? = nil, blocks: [String]? = nil,
            name: String? = nil
        ) {
            self.name = name
            self.route = route
            self.exists = exists
            self.size = size
            self.sha256 = sha256
            self.blocks = blocks
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case route, exists, size, sha256, blocks, name
        }

        /// Whether `name` is a name the API document's `name` schema allows: 1 to 255 Unicode code points (what
        /// JSON Schema's `maxLength` counts), none `/` or a control character (U+0000-U+001F, U+007F), not `.` or
        /// `..`. Looser than a catalogue's output names (at most 255 bytes): a longer name cannot match one and is
        /// judged, not refused, as the document promises a request it allows is taken.
        static func isReportedName(_ name: String) -> Bool {
            name.unicodeScalars.count <= 255 && ScenarioExpectation.hasPlainFileNameForm(name)
        }

        /// Decodes an output, refusing members the API document does not name, null values, and digests that are
        /// not 64 hex digits.
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownMembers(CodingKeys.self)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            route = try container.decode(String.self, forKey: .route)
            exists = try container.decodeIfPresent(Bool.self, forKey: .exists)
            size = try container.decodeIfPresent(UInt64.self, forKey: .size)
            sha256 = try container.decodeIfPresent(String.self, forKey: .sha256)
            blocks = try container.decodeIfPresent([String].self, forKey: .blocks)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            if let name, !Self.isReportedName(name) {
                throw DecodingError.dataCorruptedError(
                    forKey: .name, in: container,
                    debugDescription:
                        "not a plain file name (1 to 255 characters, no '/' or control character, not '.' or '..')")
            }
            if let size, size > Self.maximumSize {
                throw DecodingError.dataCorruptedError(
                    forKey: .size, in: container,
                    debugDescription: "\(size) is over 2^53 - 1, the largest integer JSON carries exactly")
            }
            if let sha256, !Self.isDigest(sha256) {
                throw DecodingError.dataCorruptedError(
                    forKey: .sha256, in: container, debugDescription: "not 64 hex digits (a SHA-256)")
            }
            if let index = blocks?.firstIndex(where: { !Self.isDigest($0) }) {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: container.codingPath + [CodingKeys.blocks, IndexKey(index)],
                        debugDescription: "not 64 hex digits (a SHA-256)"))
            }
            if exists != false && size == nil {
                throw DecodingError.keyNotFound(
                    CodingKeys.size,
                    DecodingError.Context(
                        codingPath: container.codingPath, debugDescription: "size is required unless exists is false"))
            }
            if exists != false && sha256 == nil && blocks == nil {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: container.codingPath,
                        debugDescription: "give blocks (a SHA-256 per 64 KiB block) or sha256, or exists: false"))
            }
        }

        /// The largest size a report may give: 2^53 - 1.
        static let maximumSize: UInt64 = (1 << 53) - 1

        /// Whether `text` is a SHA-256 in hex: 64 digits, either case.
        static func isDigest(_ text: String) -> Bool {
            text.utf8.count == 64
                && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
        }
    }

    /// `POST /_conformance/runs/{run}/result`.
    public struct ResultReport: Codable, Sendable {
        /// `success`, `failure` or `cancelled`: how the client said the download ended.
        public var outcome: String
        /// One per handed-out URL.
        public var outputs: [ReportedOutput]
        /// The names of the steps the client performed (`kill-at`, ...); a step left out makes the verdict n/a.
        public var stepsDone: [String]?
        /// With `failure`: the client's own words (an error message), shown in the reason.
        public var detail: String?
        /// With `disk-full-at` in `steps-done`: how the client said its first run, on the full filesystem, ended.
        public var diskFullOutcome: String?

        /// Makes a report.
        public init(
            outcome: String, outputs: [ReportedOutput], stepsDone: [String]? = nil, detail: String? = nil,
            diskFullOutcome: String? = nil
        ) {
            self.outcome = outcome
            self.outputs = outputs
            self.stepsDone = stepsDone
            self.detail = detail
            self.diskFullOutcome = diskFullOutcome
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case outcome, outputs, detail
            case stepsDone = "steps-done"
            case diskFullOutcome = "disk-full-outcome"
        }

        /// The outcomes a report may give.
        public static let outcomes = ["success", "failure", "cancelled"]
        /// The step names `steps-done` may list.
        public static let stepNames = ["kill-at", "pause-at", "cancel-at", "prefill", "disk-full-at"]

        /// Decodes a report, refusing members the API document does not name, null values, an outcome or step name
        /// it does not list. Two outputs for one route are a rule over the run (a 409 after it is looked up), not the
        /// document's.
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownMembers(CodingKeys.self)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            outcome = try container.decode(String.self, forKey: .outcome)
            outputs = try container.decode([ReportedOutput].self, forKey: .outputs)
            stepsDone = try container.decodeIfPresent([String].self, forKey: .stepsDone)
            detail = try container.decodeIfPresent(String.self, forKey: .detail)
            diskFullOutcome = try container.decodeIfPresent(String.self, forKey: .diskFullOutcome)
            guard Self.outcomes.contains(outcome) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .outcome, in: container,
                    debugDescription: "'\(outcome)' is not success, failure or cancelled")
            }
            if let diskFullOutcome, !Self.outcomes.contains(diskFullOutcome) {
                throw DecodingError.dataCorruptedError(
                    forKey: .diskFullOutcome, in: container,
                    debugDescription: "'\(diskFullOutcome)' is not success, failure or cancelled")
            }
            if let unknown = stepsDone?.first(where: { !Self.stepNames.contains($0) }) {
                throw DecodingError.dataCorruptedError(
                    forKey: .stepsDone, in: container,
                    debugDescription:
                        "'\(unknown)' is not a step name (kill-at, pause-at, cancel-at, prefill, disk-full-at)")
            }
        }
    }

    /// The verdict of one run: the answer to a result, and one line of the results file.
    public struct Verdict: Codable, Sendable, Hashable {
        /// The scenario.
        public var scenario: String
        /// The client label.
        public var client: String
        /// `http` or `https`.
        public var scheme: String
        /// The run token.
        public var run: String
        /// `pass`, `fail` or `n/a`.
        public var result: String
        /// Why, in one line; empty for a pass.
        public var reason: String
        /// When it was judged (RFC 3339).
        public var time: String
        /// How long the run took, in milliseconds, from the first request's arrival to the last response's end.
        public var elapsedMilliseconds: Int64?
        /// The judge's notes on the run (``MatrixCell/notes``); absent when there are none.
        public var notes: [String]? = nil
        /// `pass`, `corrupt`, `fail`, `unsafe` or `costly` (``Grade``); absent for n/a, and in verdicts saved before
        /// grades existed, which read back as `fail` when their result is.
        public var grade: String? = nil
        /// Every violation with its grade; absent for a pass and n/a.
        public var reasons: [Violation]? = nil
        /// How to reproduce the run by hand (``Reproducer``); present for a failure only.
        public var reproducer: Reproducer? = nil

        enum CodingKeys: String, CodingKey {
            case scenario, client, scheme, run, result, reason, time, notes, grade, reasons, reproducer
            case elapsedMilliseconds = "elapsed-ms"
        }
    }

    /// `200` to a `DELETE`: what was removed.
    public struct Removal: Codable, Sendable, Hashable {
        /// The verdicts removed from the report and the results file.
        public var verdicts: Int
        /// The runs handed out and not yet reported that were forgotten (a later request naming one is answered 404,
        /// saying it was deleted).
        public var pending: Int
    }

    /// A 4xx or 5xx body.
    public struct ErrorBody: Codable, Sendable {
        /// One line.
        public var error: String
    }
}

extension Decoder {
    /// Refuses a JSON object member that `keys` does not name, and a member whose value is null, so a body the API
    /// document does not allow is refused rather than half read.
    func refuseUnknownMembers<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        let container = try container(keyedBy: MemberKey.self)
        let known = Set(Keys.allCases.map(\.stringValue))
        for key in container.allKeys {
            guard known.contains(key.stringValue) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "not a property the API document allows")
            }
            if try container.decodeNil(forKey: key) {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "must not be null")
            }
        }
    }
}

/// Any member name of a JSON object.
struct MemberKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// An array position in a coding path.
struct IndexKey: CodingKey {
    var stringValue: String { String(index) }
    var intValue: Int? { index }
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { index = intValue }
}
