import Foundation
import RangeServer

extension CatalogueEntry {
    /// The row served over `file`, a file below the server's root, for a column that must download a file of its
    /// own kind at a URL ending in its name (pip: a wheel): the same steps and faults at
    /// `/scenario/NAME/RUN/~/FILE` (the server's `ScenarioPath`), judged against the file's bytes.
    ///
    /// - Parameters:
    ///   - file: the file, relative to the root (`wheels/rangecheck_probe-1.0-py3-none-any.whl`).
    ///   - root: the directory the server serves under `/files/`.
    ///   - client: the column's name, for the reasons.
    /// - Returns: the entry, or why the row cannot be served over a file (its n/a reason).
    public func served(over file: String, root: String, client: String) -> Result<CatalogueEntry, ConformanceError> {
        let name = (file as NSString).lastPathComponent
        func notHere(_ reason: String) -> Result<CatalogueEntry, ConformanceError> {
            .failure(.invalidArgument("\(client) downloads one \(name) at a URL of its name: \(reason)"))
        }
        if !expectation.files.isEmpty { return notHere("the row serves several files") }
        if versions.count > 1 || Set(versionLengths.values).count > 1
            || scenario.routes.values.contains(where: { $0.attempts.contains { $0.size != nil } })
        {
            return notHere("the row changes the representation between attempts, which a file cannot")
        }
        for route in scenario.routes.values {
            for step in route.attempts {
                switch step.redirectTarget {
                case .path, .listener: return notHere("the row redirects to a resource or listener of its own")
                case .route, nil: break
                }
            }
        }
        var served = scenario
        let resource = "/files/\(file)"
        for (key, route) in served.routes where route.resource == scenario.resource {
            served.routes[key]?.resource = resource
        }
        served.resource = resource
        var entry: CatalogueEntry
        do {
            entry = try CatalogueEntry(scenario: served, root: root)
        } catch {
            return .failure(.invalidArgument("\(client): \(file) below \(root): \(error.message)"))
        }
        guard entry.reference.length >= reference.length else {
            return notHere("its resource is \(reference.length) bytes, \(name) only \(entry.reference.length)")
        }
        entry.servedOver = file
        return .success(entry)
    }
}
