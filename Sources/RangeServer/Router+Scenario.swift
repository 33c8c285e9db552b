extension Router {
    /// Numbers a request to `/scenario/...` as its headers arrive: a GET of an existing scenario route takes its
    /// arrival number and its attempt under the counters' lock, so the attempts of one run follow the arrival order
    /// the journal shows, whichever request is planned first.
    ///
    /// A GET counted here spends its attempt even when the plan then refuses its query (400).
    ///
    /// - Parameters:
    ///   - method: the request method.
    ///   - target: the request target, starting with `/scenario/`.
    ///   - takeArrival: takes the server's next arrival number.
    /// - Returns: the arrival number, the attempt when one was counted, and the request as the server's open
    ///   requests will know it (under the run the target names, for any method), until its entry is stored.
    func admit(
        method: String, target: String, connection: any ExchangeConnection, takeArrival: () -> Int
    ) -> (arrival: Int, attempt: Int?, exchange: OpenExchange?) {
        let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
        guard let parts = ScenarioPath(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2))
        else { return (takeArrival(), nil, nil) }
        let run = String(parts.run)
        // What the journal counts as sent is what went into the socket. Left to grow, the kernel's buffers take
        // megabytes of a response on loopback before the client has read the first: a probe that reads 512 bytes
        // of a 1 MiB file and closes would look like a whole download, and a drop could fire in the buffers of a
        // client that never reached it. Capped, the count stays within about 200 KiB of what the client took.
        connection.capBuffering(at: Self.scenarioSendBuffer)
        func exchange(_ scenario: String? = nil, _ route: String? = nil, _ attempt: Int? = nil) -> OpenExchange {
            OpenExchange(run: run, scenario: scenario, route: route, attempt: attempt, connection: connection)
        }
        guard method == "GET", let scenario = scenarios[String(parts.name)] else {
            return (takeArrival(), nil, exchange())
        }
        let route = String(parts.route)
        guard scenario.routes[route] != nil else { return (takeArrival(), nil, exchange()) }
        let open = journal.openExchanges
        let countsProbes = scenario.countsProbes
        let (arrival, attempt) = counters.nextAttempt(
            scenario: scenario.name, run: run, route: route, arrival: takeArrival
        ) { latest in
            !countsProbes
                && open.reclaimAttempt(scenario: scenario.name, run: run, route: route, latest: latest)
        }
        return (arrival, attempt, exchange(scenario.name, route, attempt))
    }

    /// The send buffer of a connection serving a scenario (see `admit`).
    static let scenarioSendBuffer = 64 * 1024

    /// Gives back the attempt of a response the client left of its own accord (`JournalEntry.abandoned`: a probe, or a
    /// download it dropped to start again), so its next request meets the step that one met; not in a scenario that
    /// `countsProbes`.
    func giveBackProbe(_ exchange: CompletedExchange) {
        guard exchange.abandoned, !exchange.attemptGivenBack, exchange.request.method == "GET",
            case .some(let context) = exchange.plan.scenario, let attempt = context.attempt,
            scenarios[context.scenario]?.countsProbes == false
        else { return }
        counters.giveBack(scenario: context.scenario, run: context.run, route: context.route, attempt: attempt)
    }

    /// `/scenario/{name}/{run}[/{route}][/~/{file}]`: the attempt's step decides the faults, version, size or
    /// redirect; with `~`, over a file below the root (``ScenarioPath``).
    func serveScenario(_ request: IncomingRequest, segments: [Substring]) -> ResponsePlan {
        guard let parts = ScenarioPath(segments) else {
            return .text(404, "not found: expected /scenario/NAME/RUN[/ROUTE][/~/FILE]")
        }
        let name = String(parts.name)
        let run = String(parts.run)
        let routeName = String(parts.route)
        guard let scenario = scenarios[name] else { return .text(404, "no scenario named '\(name)'") }
        guard let route = scenario.routes[routeName] else {
            return .text(404, "scenario '\(name)' has no route '\(routeName)'")
        }
        // Faults on the scenario URL itself layer over every step, so one scenario can be run slower or
        // rougher without a new file; resource parameters belong to the scenario and are refused here.
        let requestFaults: FaultPlan
        do {
            let (plan, passthrough) = try FaultPlan.parse(query: QueryString.parse(String(request.rawQuery)))
            if let key = passthrough.first?.key {
                return .text(400, "bad request: parameter '\(key)' is set by the scenario, not the URL")
            }
            requestFaults = plan
        } catch {
            return .text(400, "bad request: \(error)")
        }
        // HEAD looks without spending an attempt. A GET's attempt was normally counted as it arrived (`admit`).
        var attempt =
            request.method == "GET"
            ? request.reservedAttempt ?? counters.nextAttempt(scenario: name, run: run, route: routeName)
            : counters.currentAttempt(scenario: name, run: run, route: routeName) + 1
        if request.method != "GET", route.step(forAttempt: attempt).faults.refusesBeforeHeaders {
            // Except a HEAD the step refuses before any HEADERS (HTTP/2's REFUSED_STREAM and the like at 0 bytes, a
            // refusing GOAWAY): that is the attempt's fault, met. A client that looks first and retries a refused
            // stream at once, as RFC 9113 §8.7 allows, would otherwise be refused for ever.
            attempt = counters.nextAttempt(scenario: name, run: run, route: routeName)
        }
        let step = route.step(forAttempt: attempt)
        let context = ScenarioContext(
            scenario: name, run: run, route: routeName, attempt: request.method == "GET" ? attempt : nil)
        if let destination = step.redirectTarget, let target = step.redirect {
            // `redirect-host` sends the client to another origin of this server (same port and scheme, another host
            // name).
            var origin =
                step.redirectHost.map { host in
                    request.isTLS
                        ? "https://\(host):\(tlsPort.load(ordering: .relaxed))"
                        : "http://\(host):\(boundPort.load(ordering: .relaxed))"
                } ?? ""
            let location: String
            switch destination {
            case .path(let path):
                location = path
            case .route(let route):
                // A run served over a file stays over it at the next route.
                location = "/scenario/\(name)/\(run)/\(route)" + (parts.over.map { "/~/\($0)" } ?? "")
            case .listener(let listener):
                // Another listener of this server, by the host name the client used (or redirect-host's).
                location = listener.path
                let host = step.redirectHost ?? hostName(request)
                let port: Int
                switch listener.kind {
                case .blackhole: port = blackholePort.load(ordering: .relaxed)
                case .http: port = boundPort.load(ordering: .relaxed)
                case .https: port = tlsPort.load(ordering: .relaxed)
                case .tlsFault(let fault): port = tlsFaultPorts.withLockedValue { $0[fault.rawValue] } ?? 0
                }
                origin = "\(listener.kind.scheme)://\(host):\(port)"
            }
            var plan = redirect(request, to: origin + location, code: step.redirectCode ?? 302, absolute: false)
            plan.scenario = context
            plan.faults = ["redirect=\(target)"] + (step.redirectHost.map { ["redirect-host=\($0)"] } ?? [])
            return plan
        }
        let version = route.effectiveVersion(forAttempt: attempt, base: 0)
        if let over = parts.over, route.resource == scenario.resource {
            // The file's own bytes, length and validators: a step's version and size are the resource's.
            return serveResource(
                request, resource: ResourcePath(Substring("/files/\(over)"), kind: .files), query: "",
                base: requestFaults.merged(over: step.faults), scenario: context)
        }
        let resource = route.resource
        let question = resource.firstIndex(of: "?")
        let path = question.map { resource[..<$0] } ?? resource[...]
        let query = question.map { resource[resource.index(after: $0)...] } ?? ""
        return serveResource(
            request, resource: ResourcePath(path), query: query, base: requestFaults.merged(over: step.faults),
            versionOverride: version > 0 ? UInt64(version) : nil,
            sizeOverride: route.effectiveSize(forAttempt: attempt),
            scenario: context
        )
    }
}

extension Router {
    /// The host the client named in `Host`, without its port (an IPv6 address keeps its brackets); the bound address
    /// when there is no Host.
    func hostName(_ request: IncomingRequest) -> String {
        guard let host = request.header("host"), !host.isEmpty else {
            return configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") { return String(host[...close]) }
        return String(host.prefix { $0 != ":" })
    }
}

extension Router {
    /// The scenario, run and route a target names, without counting an attempt: for an answer that never reaches
    /// the scenario (a 421 on the HTTP/2 port), which the run's journal must still show. Nil outside `/scenario/`.
    func scenarioContext(naming target: String) -> ScenarioContext? {
        guard target.hasUTF8Prefix("/scenario/") else { return nil }
        let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
        guard let parts = ScenarioPath(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2))
        else { return nil }
        return ScenarioContext(
            scenario: String(parts.name), run: String(parts.run), route: String(parts.route), attempt: nil)
    }
}
