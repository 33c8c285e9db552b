import Foundation
import RangeServer

extension ConformanceService {
    /// `GET /_conformance/scenarios`.
    struct ScenarioListing: Encodable {
        struct Item: Encodable {
            var name: String
            var description: String
            var files: [String]
            var steps: [ConformanceAPI.StepSpec]
            var tags: [String]
            var expect: JSONValue?
            /// The RFC sections the row rests on, or `{"none": "why"}`.
            var rfc: ScenarioCitations
            /// Reports of the row's failure in real clients, or `{"none": "why"}`.
            var seenIn: ScenarioCitations

            private enum CodingKeys: String, CodingKey {
                case name, description, files, steps, tags, expect, rfc
                case seenIn = "seen-in"
            }
        }

        var scenarios: [Item]
    }

    /// `GET /_conformance/runs/{run}`: a run handed out, or judged.
    struct RunStatus: Encodable {
        var run: String
        var scenario: String
        var client: String
        var scheme: String
        /// `pending` or `judged`.
        var state: String
        var verdict: ConformanceAPI.Verdict?
    }

    func scenarioListing() -> ScenarioListing {
        ScenarioListing(
            scenarios: catalogue.map { entry in
                ScenarioListing.Item(
                    name: entry.name, description: entry.scenario.description, files: entry.expectation.files,
                    steps: Self.steps(of: entry, prefillURL: nil), tags: entry.expectation.tags.sorted(),
                    expect: try? entry.scenario.expect?.decode(JSONValue.self), rfc: entry.references.rfc,
                    seenIn: entry.references.seenIn)
            })
    }

    /// The steps of a scenario as the API hands them out; `prefillURL` is the run's prefill endpoint (nil in the
    /// catalogue listing, where there is no run yet).
    static func steps(of entry: CatalogueEntry, prefillURL: String?) -> [ConformanceAPI.StepSpec] {
        let routes = entry.expectation.files.isEmpty ? [""] : entry.expectation.files
        let total = entry.reference.length * UInt64(routes.count)
        return entry.expectation.steps.map { step in
            let threshold = MatrixRunner.threshold(of: step)
            var spec = ConformanceAPI.StepSpec(bytes: threshold.bytes(of: total))
            switch step {
            case .killAndRestart: spec.killAt = threshold.text
            case .pause(_, let duration):
                spec.pauseAt = threshold.text
                let (seconds, attoseconds) = duration.components
                let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
                spec.pauseFor = milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
            case .cancel: spec.cancelAt = threshold.text
            case .diskFull: spec.diskFullAt = threshold.text
            case .prefill:
                spec.prefill = threshold.text
                // Per output, not of all of them: each output starts with this much.
                spec.bytes = min(threshold.bytes(of: entry.reference.length), entry.reference.length)
                spec.urls = prefillURL.map { base in
                    routes.map { route in
                        let query = route.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                        return ConformanceAPI.HandedURL(
                            route: route, url: base + (route.isEmpty ? "" : "?route=\(query)"))
                    }
                }
            }
            return spec
        }
    }

    /// `POST /_conformance/runs`: a fresh run token and the URLs to download.
    func createRun(
        _ request: ConformanceAPI.RunRequest, host: String?, isTLS: Bool
    ) throws(ConformanceError)
        -> ConformanceAPI.RunCreated
    {
        guard let entry = entries[request.scenario] else {
            throw .notFound("unknown scenario '\(request.scenario)' (GET \(Self.prefix)scenarios lists them)")
        }
        let label = request.client
        if let problem = ConformanceAPI.labelProblem(label) { throw .invalidReport("client: \(problem)") }
        let scheme = request.scheme ?? "http"
        guard let wire = MatrixScheme(rawValue: scheme) else {
            throw .invalidReport("scheme: '\(scheme)' is not http, https, h2 or h2c")
        }
        if let exclusion = wire.exclusion(of: entry) {
            throw .invalidReport("scheme: \(entry.name) does not run over \(scheme): \(exclusion)")
        }
        guard let server else { throw .notFound("the service has no server attached") }
        let reach = self.reach(requestHost: host, isTLS: isTLS, server: server)
        let origin = try self.origin(for: entry, scheme: scheme, reach: reach, server: server)
        let token = RunToken(label: label, issued: wallNow).text
        let base = "\(origin)/scenario/\(entry.name)/\(token)"
        let urls =
            entry.expectation.files.isEmpty
            ? [ConformanceAPI.HandedURL(route: "", url: base)]
            : entry.expectation.files.map { ConformanceAPI.HandedURL(route: $0, url: "\(base)/\($0)") }
        // The API's own URLs on the origin the client asked from (the scenario's may be a blackhole).
        let apiOrigin = reach.apiOrigin
        let steps = Self.steps(of: entry, prefillURL: "\(apiOrigin)\(Self.prefix)runs/\(token)/prefill")
        let pending = PendingRun(
            run: token, scenario: entry.name, client: label, scheme: scheme, urls: urls, steps: steps,
            segmented: request.segmented, created: .now)
        let now = configuration.clock()
        runs.withLockedValue { $0.set(.pending(pending), forKey: token, now: now) }
        let needsCA = wire.isTLS || entry.redirectsToTLS
        return ConformanceAPI.RunCreated(
            run: token, scenario: entry.name, client: label, scheme: scheme, urls: urls, steps: steps,
            ca: needsCA ? server.certificateAuthorityPEM : nil, authorization: entry.expectation.authorization,
            outputNames: entry.expectation.outputNames, result: "\(apiOrigin)\(Self.prefix)runs/\(token)/result")
    }

    /// Where clients reach the server: the host, the plain port (a forwarded one when known) and the API's origin.
    struct Reach {
        var host: String
        var plainPort: Int
        var apiOrigin: String
    }

    /// How the client that sent a request reaches the server: the public URL's host and port first, else the host
    /// and port its request named in `Host` (a forwarded port, an emulator's 10.0.2.2), else the address the server
    /// listens on. IPv6 addresses in brackets.
    func reach(requestHost: String?, isTLS: Bool, server: RangeServer) -> Reach {
        func bracketed(_ host: String) -> String { host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host }
        let published = configuration.publicURL.flatMap { URLComponents(string: $0) }
        let named = requestHost.flatMap { URLComponents(string: "http://\($0)") }.flatMap {
            $0.host?.isEmpty == false ? $0 : nil
        }
        let listening: String =
            switch server.configuration.host {
            case "0.0.0.0": "127.0.0.1"
            case "::": "::1"
            case let host: host
            }
        let host = bracketed(published?.host ?? named?.host ?? listening)
        // The Host port names the plain port only when the request came in on it.
        let plainPort = published?.port ?? (isTLS ? nil : named?.port) ?? server.port
        let apiOrigin =
            isTLS
            ? "https://\(host):\(named?.port ?? server.tlsPort ?? server.port)" : "http://\(host):\(plainPort)"
        return Reach(host: host, plainPort: plainPort, apiOrigin: apiOrigin)
    }

    /// `http://HOST:PORT` or `https://HOST:TLSPORT` where the scenario's URLs point, as clients reach the server.
    private func origin(
        for entry: CatalogueEntry, scheme: String, reach: Reach, server: RangeServer
    )
        throws(ConformanceError) -> String
    {
        if entry.expectation.entry == .blackhole {
            guard let port = server.blackholePort else {
                throw .notFound("this server has no blackhole listener for \(entry.name)")
            }
            return "\(scheme)://\(reach.host):\(port)"
        }
        switch scheme {
        case "https":
            guard let port = server.tlsPort else {
                throw .invalidReport("scheme: this server has no TLS port (start it with --tls-port)")
            }
            return "https://\(reach.host):\(port)"
        case "h2":
            guard let port = server.h2Port else {
                throw .invalidReport("scheme: this server has no HTTP/2 TLS port (start it with --h2-port)")
            }
            return "https://\(reach.host):\(port)"
        case "h2c":
            guard let port = server.h2cPort else {
                throw .invalidReport("scheme: this server has no cleartext HTTP/2 port (start it with --h2c-port)")
            }
            return "http://\(reach.host):\(port)"
        default:
            return "http://\(reach.host):\(reach.plainPort)"
        }
    }

    /// `GET /_conformance/runs/{run}`.
    func runStatus(_ run: String) throws(ConformanceError) -> RunStatus {
        switch try heldRun(run) {
        case .judged(let verdict):
            return RunStatus(
                run: run, scenario: verdict.scenario, client: verdict.client, scheme: verdict.scheme, state: "judged",
                verdict: verdict)
        case .pending(let pending):
            return RunStatus(
                run: run, scenario: pending.scenario, client: pending.client, scheme: pending.scheme, state: "pending")
        }
    }

    /// The run `run`, counted as a use of it.
    ///
    /// - Throws: `notFound` for a string that was never a run token, `gone` for a run no longer held.
    func heldRun(_ run: String) throws(ConformanceError) -> HeldRun {
        let now = configuration.clock()
        guard let held = runs.withLockedValue({ $0.value(forKey: run, now: now) }) else { throw missing(run) }
        return held
    }

    /// The error for a run that is not held: 404 when `run` was never a token of this service or was deleted, else
    /// 410 with why it is gone, read from the token's issue time (the service does not remember the runs it forgot).
    func missing(_ run: String) -> ConformanceError {
        guard let token = RunToken(parsing: run) else {
            return .notFound("no run '\(run)' (POST \(Self.prefix)runs first)")
        }
        let now = configuration.clock()
        if deleted.withLockedValue({ $0.peekValue(forKey: run, now: now) }) != nil {
            return .notFound("run '\(run)' was deleted; ask for a new run")
        }
        let retention = configuration.runRetention
        if token.issuedMilliseconds < RunToken.milliseconds(started.date) {
            return .gone(
                "run '\(run)' was issued before this service started at \(started.date.formatted(.iso8601)) and is "
                    + "not held; ask for a new run")
        }
        let age = max(0, Int(wallNow.timeIntervalSince(token.issued)))
        if let expiry = retention.idleExpiry?.components.seconds, age >= expiry {
            return .gone(
                "run '\(run)' has expired: issued \(age) s ago, and a run unused for \(expiry) s is forgotten; ask for "
                    + "a new run")
        }
        return .gone(
            "run '\(run)' is no longer held: deleted, or pushed out by newer runs (at most \(retention.limit) are "
                + "held); ask for a new run")
    }

    /// `GET /_conformance/runs/{run}/prefill?route=R`: the bytes a `prefill` step puts in place.
    func prefill(run: String, route: String) throws(ConformanceError) -> CustomRoute.Response {
        guard case .pending(let pending) = try heldRun(run) else {
            throw .notFound("run '\(run)' is judged; its prefill is no longer handed out")
        }
        guard let step = pending.steps.first(where: { $0.prefill != nil }), let entry = entries[pending.scenario]
        else { throw .notFound("run '\(run)' has no prefill step") }
        guard pending.urls.contains(where: { $0.route == route }) else {
            throw .notFound("run '\(run)' has no route '\(route)'")
        }
        var body: [UInt8] = []
        body.reserveCapacity(Int(step.bytes))
        entry.reference.forEachBlock(version: entry.expectedVersion, size: OutputInspector.blockSize, upTo: step.bytes)
        {
            body.append(contentsOf: $0)
        }
        return CustomRoute.Response(
            status: 200, headers: [("Content-Type", "application/octet-stream")], body: body)
    }
}
