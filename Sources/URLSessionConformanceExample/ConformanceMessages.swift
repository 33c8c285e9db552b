import Foundation

/// `GET /_conformance/scenarios`: the catalogue the server judges against.
struct ScenarioList: Decodable {
    /// One scenario; its name is all a run needs, its tags say whether it is `slow`.
    struct Scenario: Decodable {
        var name: String
        var description: String?
        var tags: [String]?
    }

    var scenarios: [Scenario]
}

/// `POST /_conformance/runs`: the request for a run of one scenario.
struct RunRequest: Encodable {
    var scenario: String
    var client: String
    var scheme: String
}

/// The answer to ``RunRequest``: the URLs to download and the steps the client performs on the way.
struct Run: Decodable {
    /// One URL to download; `route` names its output in the result (empty for a single-file scenario).
    struct Download: Decodable {
        var route: String
        var url: String
    }

    var run: String
    var urls: [Download]
    var steps: [Step]
    /// The CA certificate (PEM) of an https run.
    var ca: String?
}

/// One step of a run, such as `{"kill-at": "25%", "bytes": 1048576}` or `{"pause-at": "40%", "for": "1s", ...}`:
/// exactly one of the kinds is set, and `bytes` is where it happens, counted over all outputs on disk (for
/// `disk-full-at`, the room of the filesystem the outputs are on).
struct Step: Decodable {
    var killAt: String?
    var pauseAt: String?
    var pauseFor: String?
    var cancelAt: String?
    var prefill: String?
    var diskFullAt: String?
    var bytes: Int64

    /// The step's name, as `steps-done` lists it; nil for a kind this client does not know (a newer server's).
    var name: String? {
        if killAt != nil { return "kill-at" }
        if pauseAt != nil { return "pause-at" }
        if cancelAt != nil { return "cancel-at" }
        if prefill != nil { return "prefill" }
        if diskFullAt != nil { return "disk-full-at" }
        return nil
    }

    /// Whether this client performs the step while it downloads: `kill-at`, `pause-at` and `cancel-at`. The others
    /// stay out of `steps-done`, so the server says n/a, never a pass.
    var isPerformed: Bool { killAt != nil || pauseAt != nil || cancelAt != nil }

    /// How long a `pause-at` lasts: `2s` or `500ms`; one second when it cannot be read.
    var pauseSeconds: Double {
        let text = pauseFor ?? "1s"
        if text.hasSuffix("ms") { return (Double(text.dropLast(2)) ?? 1000) / 1000 }
        return Double(text.hasSuffix("s") ? text.dropLast() : Substring(text)) ?? 1
    }

    enum CodingKeys: String, CodingKey {
        case killAt = "kill-at"
        case pauseAt = "pause-at"
        case pauseFor = "for"
        case cancelAt = "cancel-at"
        case diskFullAt = "disk-full-at"
        case prefill, bytes
    }
}

/// `POST /_conformance/runs/{run}/result`: what the client did and what it left on disk.
struct RunResult: Encodable {
    /// One output file: its size, SHA-256, and the SHA-256 of each 64 KiB block (the last may be short); or
    /// `exists: false` when there is no file.
    struct Output: Encodable {
        var route: String
        var exists: Bool?
        var size: Int64?
        var sha256: String?
        var blocks: [String]?
    }

    var outcome: String
    var outputs: [Output]
    var stepsDone: [String]
    /// With `failure`: why, in the client's words.
    var detail: String?

    enum CodingKeys: String, CodingKey {
        case outcome, outputs, detail
        case stepsDone = "steps-done"
    }
}

/// The answer to ``RunResult``: the server's verdict.
struct Verdict: Decodable {
    var scenario: String
    var client: String
    /// `pass`, `fail` or `n/a`.
    var result: String
    /// For a failure, how bad it is: `corrupt`, `fail`, `unsafe` or `costly`; absent from a server without grades.
    var grade: String?
    var reason: String?

    /// What the line shows: the grade of a failure (`fail` when the server gave none), else the result.
    var label: String { result == "fail" ? grade ?? "fail" : result }
}

/// A 4xx answer: `{"error": "one line"}`.
struct ErrorAnswer: Decodable {
    var error: String
}
