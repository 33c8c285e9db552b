/// Fuzzes the scenario loader, `Scenario.parse(_:name:source:)`, on arbitrary bytes.
///
/// Invariants: failures are `invalidScenario` errors that name the source first; an accepted scenario
/// has its main route, every route name is URL-safe, every redirect to a route names an existing
/// non-main route (a listener target such as `https:/PATH` is not a route), every redirect path is
/// absolute, redirect codes are the allowed ones, and every step's fault plan is consistent.
@_cdecl("LLVMFuzzerTestOneInput")
public func scenarioJSONFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = fuzzBytes(start, count)
    let scenario: Scenario
    do {
        scenario = try Scenario.parse(bytes, name: "fuzz", source: "fuzz.json")
    } catch let error as RangeServerError {
        fuzzCheck(RangeServerError.invalidScenario("") ~= error, "rejections are invalidScenario: \(error)")
        fuzzCheck(error.message.hasPrefix("fuzz.json:"), "message names the source: \(error.message)")
        return 0
    } catch {
        fuzzCheck(false, "unexpected error type \(error)")
        return 0
    }
    fuzzCheck(scenario.name == "fuzz", "name kept")
    fuzzCheck(scenario.route(Scenario.mainRoute) != nil, "main route exists")
    fuzzCheck(scenario.resource.hasPrefix("/"), "resource is absolute")
    for (name, route) in scenario.routes {
        fuzzCheck(name == Scenario.mainRoute || Scenario.isURLSafeName(name), "route name \(name) is URL-safe")
        fuzzCheck(route.resource.hasPrefix("/"), "route resource is absolute")
        for step in route.attempts {
            fuzzCheck((try? step.faults.checkCombination()) != nil, "step faults are consistent")
            if let code = step.redirectCode {
                fuzzCheck(ScenarioStep.redirectCodes.contains(code), "redirect code \(code)")
            }
            fuzzCheck(ScenarioStep.redirectCodes.contains(step.effectiveRedirectCode), "effective redirect code")
            switch step.redirectTarget {
            case .route(let target)?:
                fuzzCheck(
                    target != Scenario.mainRoute && scenario.routes[target] != nil, "redirect to \(target) exists")
            case .path(let path)?:
                fuzzCheck(path.hasPrefix("/"), "redirect path \(path) is absolute")
            case .listener(let listener)?:
                fuzzCheck(listener.path.hasPrefix("/"), "listener redirect path \(listener.path) is absolute")
            case nil:
                fuzzCheck(step.redirect == nil, "a redirect has a target")
            }
            if let version = step.version { fuzzCheck(version >= 1, "version \(version) at least 1") }
        }
        for attempt in [-1, 0, 1, 2, route.attempts.count + 5] {
            _ = route.step(forAttempt: attempt)
            fuzzCheck(route.effectiveVersion(forAttempt: attempt, base: 1) >= 1, "effective version at least 1")
        }
    }
    if let expect = scenario.expect {
        if case .object = expect.value.kind {} else { fuzzCheck(false, "expect is an object when present") }
    }
    return 0
}
