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
            for (key, value) in query {
                switch key {
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
            return .json(200, journal.encodedJSON(entries: journal.entries(run: run, scenario: scenario, since: since)))
        case ("DELETE", "journal"):
            journal.clear()
            return .json(200, Array(#"{"cleared":true}"#.utf8))
        case ("POST", "reset"):
            journal.clear()
            counters.reset()
            return .json(200, Array(#"{"reset":true}"#.utf8))
        case ("GET", "scenarios"), ("HEAD", "scenarios"):
            return .json(200, Array(scenarioListJSON().utf8))
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

    private func scenarioListJSON() -> String {
        let items = scenarios.keys.sorted().map { name -> String in
            let scenario = scenarios[name]!
            let routes = scenario.routes.keys.sorted().map(TextEscaping.jsonQuoted).joined(separator: ",")
            return
                "{\"name\":\(TextEscaping.jsonQuoted(name)),\"description\":\(TextEscaping.jsonQuoted(scenario.description)),"
                + "\"resource\":\(TextEscaping.jsonQuoted(scenario.resource)),\"routes\":[\(routes)],"
                + "\"url\":\(TextEscaping.jsonQuoted("/scenario/\(name)/{run}"))}"
        }
        return "{\"scenarios\":[\(items.joined(separator: ","))]}"
    }
}

/// Whether a numeric peer address is on the loopback network (127.0.0.0/8, ::1, or IPv4-mapped loopback).
func isLoopback(_ address: String) -> Bool {
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
