import Foundation

/// The JSON bodies of `rangecheck serve`'s API under `/_conformance/` (docs/conformance-api.json describes them).
///
/// Keys are spelled as on the wire (`steps-done`), so a client in any language reads the same names the document
/// shows.
public enum ConformanceAPI {
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
    /// Exactly one of `kill-at`, `pause-at`, `cancel-at` and `prefill` is set, with the threshold as the scenario
    /// wrote it (`25%`, `1M`); `bytes` is that threshold in bytes of all outputs together, as they count on disk.
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

        /// The step's name, as `steps-done` lists it.
        public var name: String {
            if killAt != nil { return "kill-at" }
            if pauseAt != nil { return "pause-at" }
            if cancelAt != nil { return "cancel-at" }
            return "prefill"
        }

        enum CodingKeys: String, CodingKey {
            case killAt = "kill-at"
            case pauseAt = "pause-at"
            case pauseFor = "for"
            case cancelAt = "cancel-at"
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
        /// Where to report the result.
        public var result: String
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

        /// Makes an output.
        public init(
            route: String, exists: Bool? = nil, size: UInt64? = nil, sha256: String? = nil, blocks: [String]? = nil
        ) {
            self.route = route
            self.exists = exists
            self.size = size
            self.sha256 = sha256
            self.blocks = blocks
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

        /// Makes a report.
        public init(outcome: String, outputs: [ReportedOutput], stepsDone: [String]? = nil, detail: String? = nil) {
            self.outcome = outcome
            self.outputs = outputs
            self.stepsDone = stepsDone
            self.detail = detail
        }

        enum CodingKeys: String, CodingKey {
            case outcome, outputs, detail
            case stepsDone = "steps-done"
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

        enum CodingKeys: String, CodingKey {
            case scenario, client, scheme, run, result, reason, time, notes, grade, reasons
            case elapsedMilliseconds = "elapsed-ms"
        }
    }

    /// A 4xx or 5xx body.
    public struct ErrorBody: Codable, Sendable {
        /// One line.
        public var error: String
    }
}
