extension Router {
    /// `/scenario/{name}/{run}[/{route}]`: the attempt's step decides the faults, version or redirect.
    func serveScenario(_ request: IncomingRequest, segments: [Substring]) -> ResponsePlan {
        let name = String(segments[0])
        let run = String(segments[1])
        let routeName = segments.count == 3 ? String(segments[2]) : ""
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
        // HEAD looks without spending an attempt.
        let attempt =
            request.method == "GET"
            ? counters.nextAttempt(scenario: name, run: run, route: routeName)
            : counters.currentAttempt(scenario: name, run: run, route: routeName) + 1
        let step = route.step(forAttempt: attempt)
        let context = ScenarioContext(
            scenario: name, run: run, route: routeName, attempt: request.method == "GET" ? attempt : nil)
        if let target = step.redirect {
            let location = target.hasPrefix("/") ? target : "/scenario/\(name)/\(run)/\(target)"
            var plan = redirect(request, to: location, code: step.redirectCode ?? 302, absolute: false)
            plan.scenario = context
            plan.faults = ["redirect=\(target)"]
            return plan
        }
        let version = route.effectiveVersion(forAttempt: attempt, base: 0)
        let resource = route.resource
        let question = resource.firstIndex(of: "?")
        let path = question.map { resource[..<$0] } ?? resource[...]
        let query = question.map { resource[resource.index(after: $0)...] } ?? ""
        return serveResource(
            request, resource: ResourcePath(path), query: query, base: requestFaults.merged(over: step.faults),
            versionOverride: version > 0 ? UInt64(version) : nil, scenario: context
        )
    }
}
