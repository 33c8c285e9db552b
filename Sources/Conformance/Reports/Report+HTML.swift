import RangeServer

extension Report {
    /// A self-contained HTML page: a coloured table (green pass; by grade, dark red CORRUPT, red FAIL, orange UNSAFE,
    /// yellow COSTLY; grey skipped and n/a) and the legend of the grades, with each scenario's
    /// description, the reason in each cell's tooltip and text, each run's cell linking to its picture further down
    /// the page (shown with CSS `:target`, no script), then the summaries.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    /// - Returns: the HTML document.
    public static func html(_ matrix: Matrix) -> String { html(matrix, options: HTMLOptions()) }

    /// The HTML matrix, for the report file or the live page.
    ///
    /// - Parameters:
    ///   - matrix: the results.
    ///   - options: whether the page refreshes itself, and whether details are sections of it or pages of their own.
    /// - Returns: the HTML document.
    public static func html(_ matrix: Matrix, options: HTMLOptions) -> String {
        let title = "rangecheck conformance matrix over \(htmlEscaped(matrix.scheme))"
        var text = pageHead(title: title, refreshSeconds: options.refreshSeconds)
        text += "<h1 id=\"matrix\">\(title)</h1>\n"
        if let interrupted = interruptionLine(matrix) {
            text += "<p class=\"interrupted\"><b>\(htmlEscaped(interrupted))</b></p>\n"
        }
        text += "<p><code>\(htmlEscaped(matrix.command))</code></p>\n"
        text += "<p class=\"columns\">\(htmlEscaped(columnsLine(matrix)))</p>\n"
        if let baseline = baselineLine(matrix) { text += "<p class=\"baseline\">\(htmlEscaped(baseline))</p>\n" }
        text += "<table>\n<tr><th>\(htmlEscaped(rowHeader(matrix)))</th>"
        for client in matrix.clients { text += "<th>\(htmlEscaped(client))</th>" }
        text += "</tr>\n"
        for scenario in matrix.scenarios {
            let cells = matrix.clients.map { matrix.cell(scenario: scenario, client: $0) }
            if cells.allSatisfy({ $0 == nil }) { continue }
            text += "<tr><th>\(htmlEscaped(scenario))"
            if let description = matrix.descriptions[scenario], !description.isEmpty {
                text += "<small class=\"description\">\(htmlEscaped(description))</small>"
            }
            text += "</th>"
            for cell in cells {
                guard let cell else {
                    text += "<td>–</td>"
                    continue
                }
                let result = cell.result
                text += "<td class=\"\(cssClass(cell))\" title=\"\(htmlEscaped(result.reason))\">"
                if let link = detailLink(cell, options: options) {
                    text += "<a href=\"\(htmlEscaped(link))\">\(cell.label)</a>"
                } else {
                    text += cell.label
                }
                if !result.reason.isEmpty { text += "<small>\(htmlEscaped(result.reason))</small>" }
                for note in cell.notes { text += "<small class=\"note\">\(htmlEscaped(note))</small>" }
                if let change = cell.baseline, let note = baselineNote(cell) {
                    text += "<small class=\"baseline-\(change.label)\">\(htmlEscaped(note))</small>"
                }
                text += "</td>"
            }
            text += "</tr>\n"
        }
        text += "</table>\n<p class=\"grades\">\(htmlEscaped(gradeLegend))</p>\n<ul>\n"
        for summary in matrix.summaries { text += "<li>\(htmlEscaped(summary.line))</li>\n" }
        text += "</ul>\n"
        if !matrix.invocations.isEmpty {
            text += "<h2>Invocations</h2>\n<ul>\n"
            for client in matrix.clients {
                if let invocation = matrix.invocations[client] {
                    let version = matrix.versions[client].map { " \(htmlEscaped($0))" } ?? ""
                    text +=
                        "<li><b>\(htmlEscaped(client))</b>\(version): <code>\(htmlEscaped(invocation))</code></li>\n"
                }
            }
            text += "</ul>\n"
        }
        if options.detailLink == .inPage {
            for cell in orderedCells(matrix) where cell.trace != nil {
                let anchor = detailAnchor(scenario: cell.scenario, client: cell.client)
                text += "<section class=\"run\" id=\"\(htmlEscaped(anchor))\">\n"
                text += detailBody(cell, matrix: matrix, idPrefix: anchor, matrixLink: "#matrix")
                text += "</section>\n"
            }
        }
        text += "</body></html>\n"
        return text
    }

    /// A page of its own for one run: the scenario, its description and what it rests on, the client, the verdict and its reason, the
    /// timeline with the content map and its legend, every request's facts, and a link back to the matrix (`../`,
    /// the prefix of a page at `prefix + SCENARIO/CLIENT`).
    ///
    /// - Parameters:
    ///   - cell: the run.
    ///   - matrix: the matrix it belongs to (for the scheme and the description).
    /// - Returns: the HTML document.
    public static func detailHTML(_ cell: MatrixCell, matrix: Matrix) -> String {
        detailHTML(cell, matrix: matrix, options: HTMLOptions())
    }

    /// A page of its own for one run, linking back to `options.matrixLink` (`../` when nil) and refreshing itself
    /// like the matrix when `options.refreshSeconds` is set.
    ///
    /// - Parameters:
    ///   - cell: the run.
    ///   - matrix: the matrix it belongs to.
    ///   - options: the back link and the refresh.
    /// - Returns: the HTML document.
    public static func detailHTML(_ cell: MatrixCell, matrix: Matrix, options: HTMLOptions) -> String {
        let title = "\(cell.scenario) × \(cell.client) over \(matrix.scheme): \(cell.label)"
        var text = pageHead(title: htmlEscaped(title), refreshSeconds: options.refreshSeconds)
        text += "<main class=\"detail\">\n"
        text += detailBody(
            cell, matrix: matrix, idPrefix: detailAnchor(scenario: cell.scenario, client: cell.client),
            matrixLink: options.matrixLink ?? "../")
        text += "</main>\n</body></html>\n"
        return text
    }

    /// The anchor of a run's section, `run-SCENARIO-CLIENT`, with any character outside letters, digits, `.`, `-`
    /// as `_XX` (its UTF-8 bytes in hex), so it is a valid fragment as it stands.
    static func detailAnchor(scenario: String, client: String) -> String {
        func safe(_ name: String) -> String {
            var result = ""
            for byte in name.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
                    result.append(Character(Unicode.Scalar(byte)))
                default:
                    result += "_" + String(byte, radix: 16, uppercase: true)
                }
            }
            return result
        }
        return "run-\(safe(scenario))-\(safe(client))"
    }

    /// Where a cell links to: nothing for a pair that did not run.
    static func detailLink(_ cell: MatrixCell, options: HTMLOptions) -> String? {
        guard cell.trace != nil else { return nil }
        switch options.detailLink {
        case .inPage: return "#" + detailAnchor(scenario: cell.scenario, client: cell.client)
        case .page(let prefix): return prefix + percentEncoded(cell.scenario) + "/" + percentEncoded(cell.client)
        }
    }

    /// A path segment with everything but RFC 3986's unreserved characters percent-encoded.
    static func percentEncoded(_ segment: String) -> String {
        var result = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return result
    }

    /// `pass`, the grade (`corrupt`, `fail`, `unsafe`, `costly`), `na` or `skipped`.
    static func cssClass(_ cell: MatrixCell) -> String {
        if let grade = cell.grade { return grade.rawValue }
        return cell.result.label == "n/a" ? "na" : "skipped"
    }

    /// The document up to the open `<body>`: the style sheet every page shares, and the refresh when asked for.
    static func pageHead(title: String, refreshSeconds: Int?) -> String {
        var text = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        if let refreshSeconds { text += "<meta http-equiv=\"refresh\" content=\"\(max(1, refreshSeconds))\">" }
        text += "<title>\(title)</title>\n"
        text += """
            <style>
            body{font-family:system-ui,sans-serif;margin:2em;color:#222}
            table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
            th{background:#f4f4f4;text-align:left}td.pass{background:#d9f2d9}td.fail{background:#f8d0d0}
            td.corrupt{background:#8b0000;color:#fff;font-weight:bold}td.corrupt small{color:#fff}
            td.unsafe{background:#ffd8a8}td.costly{background:#fff3b0}
            td.skipped,td.na{background:#eee;color:#666}small{display:block;max-width:22em;color:#444}
            small.note{font-style:italic}small.baseline-worse{font-weight:bold;color:#b00020}
            td.corrupt small.baseline-worse{color:#fff}small.baseline-new{font-weight:bold}small.baseline-fixed{color:#1b6e1b}.interrupted{color:#b00020}
            th small.description{font-weight:normal;max-width:30em}td a{color:inherit;font-weight:bold}
            code{background:#f4f4f4;padding:1px 3px}dl.references dt{font-weight:bold}dl.references dd{margin:0 0 .3em 1em}
            pre.reproducer{background:#f4f4f4;padding:8px;overflow-x:auto}
            .run{display:none;border-top:2px solid #ccc;margin-top:2em;padding-top:1em}.run:target{display:block}
            .verdict-pass{color:#1b6e1b}.verdict-fail,.verdict-corrupt{color:#b00020}.verdict-unsafe{color:#b35900}
            .verdict-costly{color:#806000}.legend li{margin:.2em 0}
            svg{max-width:100%;height:auto}table.requests td,table.requests th{font-size:.85em;padding:2px 6px}
            </style></head><body>

            """
        return text
    }

    /// A run's picture and facts, shared by the in-page section and the page of its own.
    static func detailBody(_ cell: MatrixCell, matrix: Matrix, idPrefix: String, matrixLink: String) -> String {
        let result = cell.result
        var text = "<h2>\(htmlEscaped(cell.scenario)) × \(htmlEscaped(cell.client))</h2>\n"
        let description = matrix.descriptions[cell.scenario] ?? cell.trace?.description ?? ""
        if !description.isEmpty { text += "<p class=\"description\">\(htmlEscaped(description))</p>\n" }
        text += referencesHTML(matrix.references[cell.scenario])
        text += "<p>Client <b>\(htmlEscaped(cell.client))</b> over \(htmlEscaped(matrix.scheme)): "
        text += "<b class=\"verdict-\(cssClass(cell))\">\(cell.label)</b>"
        if !result.reason.isEmpty { text += " — \(htmlEscaped(result.reason))" }
        if let elapsed = cell.elapsed { text += " (\(Judge.seconds(elapsed)))" }
        text += "</p>\n"
        if !cell.reasons.isEmpty {
            text += "<ul class=\"reasons\">"
            text += cell.reasons.map { "<li><b>\($0.grade.rawValue)</b>: \(htmlEscaped($0.line))</li>" }.joined()
            text += "</ul>\n"
        }
        if !cell.notes.isEmpty {
            text += "<ul class=\"notes\">" + cell.notes.map { "<li>\(htmlEscaped($0))</li>" }.joined() + "</ul>\n"
        }
        text += reproducerHTML(cell)
        if let trace = cell.trace {
            text += "<figure>" + Timeline.svg(trace, idPrefix: idPrefix) + "</figure>\n"
            text += legend
            text += requestTable(trace)
        } else {
            text += "<p>This pair did not run, so there is no picture.</p>\n"
        }
        text += "<p><a href=\"\(htmlEscaped(matrixLink))\">Back to the matrix</a></p>\n"
        return text
    }

    /// How to read the picture.
    static let legend = """
        <ul class="legend">
        <li>One row per request, in the order the server received it: number, method, status; then route, attempt \
        and connection.</li>
        <li>Dashed box: the byte range the request asked for, on the resource's length. Bar: the bytes the server \
        actually sent, where they sit in the resource, in the colour of the version that served them.</li>
        <li>Stripes: bytes the server had already sent in this run (same file, same version). A cross at the end: \
        the response was cut short (dropped, reset, stalled, truncated or closed by the client).</li>
        <li>↪ redirect: a hop; its Location is in the row's text and tooltip.</li>
        <li>Time: from the request's arrival to the end of its response, on the run's clock.</li>
        <li>Output content: each output on the same scale, coloured by the version each block matches; red lines \
        are splices (one version next to another), red cross-hatching is bytes that match no version.</li>
        </ul>

        """

    /// Every request's facts as a table, folded away under a summary.
    static func requestTable(_ trace: RunTrace) -> String {
        var text = "<details><summary>Requests (\(trace.requests.count))</summary>\n<table class=\"requests\">\n"
        text += "<tr><th>#</th><th>method</th><th>status</th><th>route</th><th>Range</th><th>If-Range</th>"
        text += "<th>sent</th><th>sent twice</th><th>outcome</th><th>version</th><th>validator</th><th>faults</th>"
        text += "<th>arrived</th><th>ended</th><th>Location</th><th>launch</th></tr>\n"
        for request in trace.requests {
            let cells: [String] = [
                "\(request.order)", request.method, "\(request.status)",
                request.route.map { $0.isEmpty ? "main" : $0 } ?? request.target,
                request.rangeHeader ?? "", request.ifRange ?? "",
                request.sent.map { "\($0) (\(request.bodyBytesSent) of \(request.bodyBytesPlanned))" }
                    ?? "\(request.bodyBytesSent) of \(request.bodyBytesPlanned)",
                request.sentTwice.map(\.description).joined(separator: ", "), request.outcome.rawValue,
                request.version.map(String.init) ?? "", request.validator ?? "",
                request.faults.joined(separator: ", "), "+" + Timeline.seconds(request.startMilliseconds),
                "+" + Timeline.seconds(request.endMilliseconds), request.location ?? "", request.launchLabel,
            ]
            text += "<tr>" + cells.map { "<td>\(htmlEscaped($0))</td>" }.joined() + "</tr>\n"
        }
        text += "</table></details>\n"
        return text
    }
}
