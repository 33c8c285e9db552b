extension ConformanceService {
    /// The route names a report's output may give: `""` for a scenario's single URL and every named file of the
    /// catalogue's rows (the live API document lists them as the `route` enum).
    var routeNames: [String] {
        Array(Set([""] + catalogue.flatMap(\.expectation.files))).sorted()
    }

    /// Refuses what is wrong with a report whichever run it names, before the run is looked up: a request the
    /// document refuses is a 400 even when its run is no longer held (a 404 or 410 would say the request was fine).
    ///
    /// - Throws: `invalidReport` for an output's route that no row has, or a `blocks` list that does not fit `size`.
    func checkShape(of report: ConformanceAPI.ResultReport) throws(ConformanceError) {
        let known = Set(routeNames)
        for output in report.outputs {
            guard known.contains(output.route) else {
                throw .invalidReport("outputs: route '\(output.route)' is not a route of any scenario")
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
