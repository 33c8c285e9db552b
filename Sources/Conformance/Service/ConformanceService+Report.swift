import Foundation
import RangeServer

extension ConformanceService {
    /// The matrix of the verdicts held: the catalogue's scenarios as rows, one column per client label (an https
    /// run's column is the label with ` (https)`), the latest verdict of each pair in its cell.
    public var matrix: Matrix {
        let (clients, held) = store.report
        var latest: [String: MatrixCell] = [:]
        for (cell, line) in held {
            let verdict = line.verdict
            let column = cell.column
            let result: CellResult =
                switch verdict.result {
                case "pass": .pass
                case "n/a": .notApplicable(verdict.reason)
                default: .fail(verdict.reason)
                }
            latest["\(verdict.scenario)\u{0}\(column)"] = MatrixCell(
                scenario: verdict.scenario, client: column, result: result,
                elapsed: verdict.elapsedMilliseconds.map { .milliseconds($0) }, trace: line.trace,
                notes: verdict.notes ?? [], reasons: verdict.reasons ?? [])
        }
        let names = catalogue.map(\.name)
        // A verdict of a scenario no longer in the catalogue (a restart with other scenarios) keeps its row.
        let rows = names + Set(latest.values.map(\.scenario)).subtracting(names).sorted()
        let cells = rows.flatMap { scenario in clients.compactMap { latest["\(scenario)\u{0}\($0)"] } }
        return Matrix(
            scenarios: rows, clients: clients, cells: cells, command: "rangecheck serve", scheme: "http",
            descriptions: CatalogueEntry.descriptions(catalogue))
    }

    /// `GET /_conformance/report[?format=html|json|junit|markdown]`.
    func report(format: String) throws(ConformanceError) -> CustomRoute.Response {
        let matrix = self.matrix
        let (type, text): (String, String)
        switch format {
        case "html":
            var options = HTMLOptions()
            options.refreshSeconds = configuration.refreshSeconds
            options.detailLink = .page(prefix: "\(Self.prefix)report/")
            (type, text) = ("text/html; charset=utf-8", Report.html(matrix, options: options))
        case "json": (type, text) = ("application/json", Report.json(matrix))
        case "junit": (type, text) = ("application/xml", Report.junit(matrix))
        case "markdown": (type, text) = ("text/markdown; charset=utf-8", Report.markdown(matrix))
        default: throw .invalidReport("format: '\(format)' is not html, json, junit or markdown")
        }
        return CustomRoute.Response(status: 200, headers: [("Content-Type", type)], body: Array(text.utf8))
    }

    /// `GET /_conformance/report/{scenario}/{client}`: the picture of a cell's latest run.
    func detail(scenario: String, client: String) throws(ConformanceError) -> CustomRoute.Response {
        let matrix = self.matrix
        guard let cell = matrix.cell(scenario: scenario, client: client) else {
            throw .notFound("no run of \(scenario) by \(client) has been judged")
        }
        var options = HTMLOptions()
        options.matrixLink = "\(Self.prefix)report"
        let page = Report.detailHTML(cell, matrix: matrix, options: options)
        return CustomRoute.Response(
            status: 200, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(page.utf8))
    }
}
