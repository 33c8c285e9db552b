#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Router {
    /// `GET /`: what this server offers, as HTML for browsers and plain text for everything else.
    func indexPage(for request: IncomingRequest) -> ResponsePlan {
        let files = listFiles()
        let endpoints: [(String, String)] = [
            ("/bytes/{size}?seed=N&version=N", "generated content, K/M/G/T suffixes, up to 1T and beyond"),
            ("/files/{path}", "files under the root, sent with sendfile"),
            ("/redirect/{n}/{target}?redirect-code=302&redirect-location=relative", "n redirects, then /{target}"),
            ("/redirect-loop", "redirects forever"),
            ("/scenario/{name}/{run}[/{route}]", "scripted attempts; each run token counts its own attempts"),
            (
                "/scenario/{name}/{run}[/{route}]/~/{file}",
                "the same attempts over a file under the root, named by the URL"
            ),
            ("/redirect-to?url=ABSOLUTE&status_code=302", "a redirect to any URL"),
            (
                "/_hub/{target}/{org}/{repo}/resolve/{revision}/{file}",
                "the Hugging Face Hub standing in: a 302 to the base64url target"
            ),
            ("/healthz", "200 ok"),
            ("/_control/journal?run=&scenario=&since=", "the request journal (GET, DELETE)"),
            ("/_control/reset", "clear the journal and every scenario counter (POST)"),
            ("/_control/scenarios", "the loaded scenarios"),
        ]
        let faults = Self.faultListing
        let scenarioList = scenarios.keys.sorted().map { ($0, scenarios[$0]!.description) }
        if request.header("accept")?.contains("text/html") == true {
            var html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>rangeserver</title>"
            html +=
                "<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto}code{background:#eee}</style>"
            html += "</head><body><h1>rangeserver</h1><p>An HTTP range-download test server.</p><h2>Endpoints</h2><ul>"
            for (path, text) in endpoints {
                html += "<li><code>\(TextEscaping.markup(path))</code> — \(TextEscaping.markup(text))</li>"
            }
            html += "</ul><h2>Files</h2><ul>"
            for file in files {
                html += "<li><a href=\"/files/\(TextEscaping.markup(file))\">\(TextEscaping.markup(file))</a></li>"
            }
            html += "</ul><h2>Faults</h2><p>Query parameters on /bytes and /files, and keys of scenario steps.</p>"
            for (kind, keys) in faults {
                html += "<h3>\(TextEscaping.markup(kind.title))</h3><ul>"
                for key in keys {
                    html +=
                        "<li><code>\(TextEscaping.markup(key.name + "=" + key.placeholder))</code> — \(TextEscaping.markup(key.help))</li>"
                }
                html += "</ul>"
            }
            html += "<h2>Scenarios</h2><ul>"
            for (name, text) in scenarioList {
                html +=
                    "<li><a href=\"/scenario/\(TextEscaping.markup(name))/browser\">\(TextEscaping.markup(name))</a> — \(TextEscaping.markup(text))</li>"
            }
            html += "</ul></body></html>\n"
            return ResponsePlan(
                status: 200, headers: [HeaderField("Content-Type", "text/html; charset=utf-8")],
                body: .literal(Array(html.utf8)))
        }
        var text = "rangeserver: an HTTP range-download test server\n\nEndpoints:\n"
        for (path, help) in endpoints { text += "  \(path)\n      \(help)\n" }
        text += "\nFiles:\n"
        for file in files { text += "  /files/\(file)\n" }
        text += "\nFaults (query parameters on /bytes and /files, and keys of scenario steps):\n"
        for (kind, keys) in faults {
            text += "  \(kind.title):\n"
            for key in keys { text += "    \(key.name)=\(key.placeholder)\n        \(key.help)\n" }
        }
        text += "\nScenarios:\n"
        for (name, help) in scenarioList { text += "  /scenario/\(name)/{run}\n      \(help)\n" }
        return ResponsePlan(
            status: 200, headers: [HeaderField("Content-Type", "text/plain; charset=utf-8")],
            body: .literal(Array(text.utf8)))
    }

    /// Every fault key, grouped by kind in `FaultKey.Kind` order, in canonical order within a kind.
    static let faultListing: [(kind: FaultKey.Kind, keys: [FaultKey])] = FaultKey.Kind.allCases.compactMap { kind in
        let keys = FaultKey.all.filter { $0.kind == kind }
        return keys.isEmpty ? nil : (kind, keys)
    }

    /// Regular files under the root, relative, sorted; bounded so a huge root cannot stall the index.
    private func listFiles() -> [String] {
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast(), found.count < 1000 {
            guard let directory = opendir(relative.isEmpty ? rootPath : rootPath + "/" + relative) else { continue }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                }
                if name.hasPrefix(".") { continue }
                let path = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard stat(rootPath + "/" + path, &info) == 0 else { continue }
                if (info.st_mode & S_IFMT) == S_IFDIR {
                    pending.append(path)
                } else if (info.st_mode & S_IFMT) == S_IFREG {
                    found.append(path)
                }
            }
        }
        return found.sorted()
    }
}
