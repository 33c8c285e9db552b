/// The parts of a scenario URL's path after `/scenario/`: `{name}/{run}[/{route}]`, optionally followed by `/~/{file}`.
///
/// The `~` form serves the run over a file below the root instead of the scenario's resource, at a URL that ends in
/// the file's name: some clients take what they download from its URL (pip reads a wheel's name, version and tags from
/// the last segment and refuses a URL that does not end in one). Every step, attempt and fault is the scenario's;
/// only the bytes, their length and validators are the file's. A route that serves a resource of its own (a redirect
/// target elsewhere) keeps it.
struct ScenarioPath: Equatable, Sendable {
    /// The scenario's name.
    var name: Substring
    /// The run.
    var run: Substring
    /// The route (`Scenario.mainRoute` for the scenario's own URL).
    var route: Substring
    /// The file below the root the run is served over (`wheels/x-1.0-py3-none-any.whl`), still encoded; nil for the
    /// scenario's own resource.
    var over: Substring?

    /// The parts of `segments` (the path's segments after `scenario`), or nil when they are not a scenario URL:
    /// two or three segments, then optionally `~` and at least one segment, none of them empty.
    init?(_ segments: some Collection<Substring>) {
        let all = Array(segments)
        let marker = all.firstIndex(of: "~")
        let head = all[..<(marker ?? all.endIndex)]
        guard head.count == 2 || head.count == 3, !head.prefix(2).contains(where: \.isEmpty) else { return nil }
        name = head[head.startIndex]
        run = head[head.startIndex + 1]
        route = head.count == 3 ? head[head.startIndex + 2] : Substring(Scenario.mainRoute)
        if let marker {
            let file = all[(marker + 1)...]
            guard !file.isEmpty, !file.contains(where: \.isEmpty) else { return nil }
            over = Substring(file.joined(separator: "/"))
        }
    }
}
