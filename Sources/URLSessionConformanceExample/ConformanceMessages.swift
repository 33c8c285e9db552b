import Foundation

/// `GET /_conformance/scenarios`: the catalogue the server judges against.
struct ScenarioList: Decodable {
    /// One scenario; only its name is needed to ask for a run.
    struct Scenario: Decodable {
        var name: String
        var description: String?
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
    /// One file of the run.
    struct Download: Decodable {
        var route: String
        var url: String
        /// The file's length when the server gives it; a percentage step needs it (else the response's length is
        /// used once it arrives).
        var size: Int64?
    }

    var run: String
    var urls: [Download]
    var steps: [Step]
}

/// One step of a run, such as `{"kill-at": "25%"}` or `{"pause-at": "50%", "for": "2s"}`: a kind, the point at
/// which it happens, and its parameters. Decoded by hand because the kind is the key.
struct Step: Decodable {
    /// The kinds this client knows.
    static let kinds = ["kill-at", "pause-at", "cancel-at", "prefill"]

    var kind: String
    var at: String
    var parameters: [String: String]

    init(from decoder: any Decoder) throws {
        let values = try decoder.singleValueContainer().decode([String: JSONScalar].self).mapValues(\.text)
        guard let kind = Self.kinds.first(where: { values[$0] != nil }), let at = values[kind] else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "unknown step \(values.keys.sorted())"))
        }
        self.kind = kind
        self.at = at
        self.parameters = values
    }
}

/// A JSON string, number or boolean, read as text: a step's parameters are sizes, durations, URLs and digests.
struct JSONScalar: Decodable {
    var text: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if let number = try? container.decode(Int64.self) {
            text = String(number)
        } else if let number = try? container.decode(Double.self) {
            text = String(number)
        } else {
            text = String(try container.decode(Bool.self))
        }
    }
}

/// `POST /_conformance/runs/{run}/result`: what the client did and what it left on disk.
struct RunResult: Encodable {
    /// One output file: its size, SHA-256, and the SHA-256 of each 64 KiB block (the last may be short).
    struct Output: Encodable {
        var route: String
        var size: Int64
        var sha256: String
        var blocks: [String]
    }

    var outcome: String
    var outputs: [Output]
    var stepsDone: [String]

    enum CodingKeys: String, CodingKey {
        case outcome, outputs
        case stepsDone = "steps-done"
    }
}

/// The answer to ``RunResult``: the server's verdict.
struct Verdict: Decodable {
    var scenario: String
    var client: String
    /// `pass`, `fail` or `n/a`.
    var result: String
    var reason: String?
}

/// A 4xx answer: `{"error": "one line"}`.
struct ErrorAnswer: Decodable {
    var error: String
}
