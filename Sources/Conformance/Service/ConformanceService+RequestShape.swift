extension ConformanceService {
    /// The route names a report's output may give: `""` for a scenario's single URL and every named file of the
    /// catalogue's rows (the live API document lists them as the `route` enum).
    var routeNames: [String] {
        Array(Set([""] + catalogue.flatMap(\.expectation.files))).sorted()
    }

    /// Refuses what is wrong with a report whichever run it names, before the run is looked up: a request the
    /// document refuses is a 400 even when its run is no longer held (a 404 or 410 would say the request was fine).
    ///
    /// - Throws: `invalidReport` for an output's route that no row has.
    func checkShape(of report: ConformanceAPI.ResultReport) throws(ConformanceError) {
        let known = Set(routeNames)
        for output in report.outputs where !known.contains(output.route) {
            throw .invalidReport("outputs: route '\(output.route)' is not a route of any scenario")
        }
    }

    /// Refuses a report that cannot stand as its run's outcome by rules no JSON Schema can state: two outputs for
    /// one URL the run handed out (one route, or one route and `name` where the client names its files), or a
    /// `blocks` list that is not one digest per 64 KiB of its output's `size`.
    ///
    /// These are a 409 after the run is looked up, like a report that does not fit its run: the request is one the
    /// document allows, nothing is kept, and a corrected report of the same run is taken. (422 would name the
    /// second kind as well; schema-driven tools such as schemathesis take a refusal of a schema-valid body as the
    /// service breaking its document unless it is one of the statuses that depend on state, and 409 is that one.)
    ///
    /// - Throws: `conflict` naming the output.
    static func checkFit(of report: ConformanceAPI.ResultReport) throws(ConformanceError) {
        var seen: Set<[String?]> = []
        for output in report.outputs {
            guard seen.insert([output.route, output.name]).inserted else {
                throw .conflict(
                    "outputs: two outputs for route '\(output.route)'" + (output.name.map { " named '\($0)'" } ?? ""))
            }
            try ReportedOutputs.checkBlockCount(of: output)
        }
    }

    /// The one value of query parameter `name`, or `fallback` when it is absent.
    ///
    /// - Throws: `invalidReport` when it is given more than once (the document declares a single value).
    static func single(
        _ name: String, in items: [(name: String, value: String)], fallback: String
    ) throws(ConformanceError) -> String {
        let values = items.filter { $0.name == name }
        guard values.count <= 1 else {
            throw .invalidReport("\(name): given \(values.count) times; give it once")
        }
        return values.first?.value ?? fallback
    }
}
