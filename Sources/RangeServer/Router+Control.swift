import Foundation

extension Router {
    /// `/_control/...`: the journal and scenario state, for loopback peers or bearers of the token.
    func control(_ request: IncomingRequest, segments: [Substring]) -> ResponsePlan {
        if let refusal = controlAccessRefusal(request) { return refusal }
        let query = QueryString.parse(String(request.rawQuery))
        switch (request.method, segments.joined(separator: "/")) {
        case ("GET", "journal"), ("HEAD", "journal"):
            var since: Int?
            var run: String?
            var scenario: String?
            var settledWithin: Duration?
            for (key, value) in query {
                switch key {
                case "settled":
                    guard let duration = FaultDuration.parse(value), duration <= Self.longestSettledWait else {
                        return .text(400, "bad request: settled '\(value)' is not a duration of at most 60s")
                    }
                    settledWithin = duration
                case "since":
                    guard let parsed = Int(value), parsed >= 0 else {
                        return .text(400, "bad request: since '\(value)' is not a sequence number")
                    }
                    since = parsed
                case "run": run = value
                case "scenario": scenario = value
                default: return .text(400, "bad request: unknown parameter '\(key)' for /_control/journal")
                }
            }
            // A query that names a run waits for that run's open exchanges by default: an exchange is journaled just
            // after its body ends, so a client that has read its whole body and asks at once would otherwise miss its
            // last request. `settled=0` answers at once, as every query without a run does.
            let wait = settledWithin ?? (run == nil ? nil : Self.runSettledWait)
            guard let wait, wait > .zero, request.method == "GET" else {
                return .json(
                    200, journal.encodedJSON(entries: journal.entries(run: run, scenario: scenario, since: since)))
            }
            // `settled=DURATION`: first wait (holding no thread) until no request of the run is open.
            var plan = ResponsePlan(status: 500)
            plan.journaled = false
            plan.deferred = { [journal, run, scenario, since] in
                let (settled, _) = await journal.settled(run: run, timeout: wait)
                var answer = ResponsePlan.json(
                    200, journal.encodedJSON(entries: journal.entries(run: run, scenario: scenario, since: since)))
                answer.headers.append(HeaderField("Journal-Settled", settled ? "true" : "false"))
                return answer
            }
            return plan
        case ("DELETE", "journal"):
            journal.clear()
            return .json(200, Self.controlJSON(["cleared": true]))
        case ("POST", "reset"):
            journal.clear()
            counters.reset()
            faultDraws.reset()
            return .json(200, Self.controlJSON(["reset": true]))
        case ("GET", "scenarios"), ("HEAD", "scenarios"):
            return .json(200, Self.controlJSON(scenarioList()))
        case (_, "journal"):
            return .text(
                405, "method \(request.method) not allowed", headers: [HeaderField("Allow", "GET, HEAD, DELETE")])
        case (_, "reset"):
            return .text(405, "method \(request.method) not allowed", headers: [HeaderField("Allow", "POST")])
        case (_, "scenarios"):
            return .text(405, "method \(request.method) not allowed", headers: [HeaderField("Allow", "GET, HEAD")])
        default:
            return .text(404, "not found: \(request.rawPath)")
        }
    }

    /// The longest `settled=` wait a control request may ask for.
    static let longestSettledWait: Duration = .seconds(60)

    /// How long a journal query that names a run and no `settled=` waits for the run's open exchanges.
    static let runSettledWait: Duration = .seconds(2)

    /// Nil when the peer may use the control API, otherwise the refusal.
    func controlAccessRefusal(_ request: IncomingRequest) -> ResponsePlan? {
        if let token = configuration.controlToken {
            guard request.header("authorization") == "Bearer \(token)" else {
                return .text(
                    401, "the control API requires Authorization: Bearer <token>",
                    headers: [HeaderField("WWW-Authenticate", "Bearer")])
            }
            return nil
        }
        guard isLoopback(request.peerAddress) else {
            return .text(403, "the control API answers loopback peers only; start with --control-token to allow others")
        }
        return nil
    }

    /// `GET /_control/scenarios`: every scenario by name, with the URL to start a run at.
    private struct ScenarioList: Encodable {
        struct Item: Encodable {
            var name: String
            var description: String
            var resource: String
            var routes: [String]
            var url: String
        }

        var scenarios: [Item]
    }

    private func scenarioList() -> ScenarioList {
        ScenarioList(
            scenarios: scenarios.keys.sorted().map { name in
                let scenario = scenarios[name]!
                return ScenarioList.Item(
                    name: name, description: scenario.description, resource: scenario.resource,
                    routes: scenario.routes.keys.sorted(), url: "/scenario/\(name)/{run}")
            })
    }

    /// A control API body: compact, keys sorted, slashes as they are.
    private static func controlJSON(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, booleans and arrays of strings only: encoding cannot fail.
        return Array((try? encoder.encode(value)) ?? Data("{}".utf8))
    }
}

/// Whether a numeric address is on the loopback network (127.0.0.0/8, ::1, or IPv4-mapped loopback): who may use
/// `/_control/` without a token, and what an embedder's own API (`rangecheck serve`) answers without one.
///
/// - Parameters:
///   - address: a numeric IPv4 or IPv6 address.
/// - Returns: true for a loopback address.
package func isLoopback(_ address: String) -> Bool {
    address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
}

/// `?k=v&...` from pairs, percent-encoding what is not unreserved; empty when there are none.
func encodeQuery(_ pairs: [(key: String, value: String)]) -> String {
    guard !pairs.isEmpty else { return "" }
    func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
    return "?" + pairs.map { encode($0.key) + "=" + encode($0.value) }.joined(separator: "&")
}
