import Foundation

/// The OpenAPI document of the `/_conformance/` API: docs/conformance-api.json (``text``), and the copy served at
/// `GET /_conformance/openapi.json` for a running catalogue.
///
/// The static document cannot know the catalogue a service runs with, so it leaves scenario and route names as
/// strings; the served copy lists them as enums (and names the server it came from), so a tool that generates
/// requests from it (schemathesis) makes requests the service accepts.
enum ConformanceAPIDocument {
    /// The document for `catalogue`, as JSON.
    ///
    /// - Parameters:
    ///   - catalogue: the scenarios the service runs.
    ///   - routes: the route names an output may give (``ConformanceService/routeNames``).
    ///   - serverURL: the origin the API was reached at; nil keeps the document's example server.
    ///   - requiresToken: whether the service asks for a token; without one the document declares no security
    ///     requirement, so a tool that checks authentication is enforced does not expect a 401 it never gets.
    ///   - schemes: the schemes the attached server has ports for (all four when nil).
    /// - Returns: the document, pretty-printed with sorted keys.
    static func served(
        catalogue: [CatalogueEntry], routes: [String], serverURL: String?, requiresToken: Bool = true,
        schemes: [MatrixScheme]? = nil
    ) -> [UInt8] {
        guard var document = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return Array(text.utf8)
        }
        if let serverURL { document["servers"] = [["url": serverURL]] }
        if !requiresToken { document["security"] = nil }
        let runRequest = ["components", "schemas", "RunRequest"]
        let pairing = schemePairing(catalogue: catalogue, schemes: schemes ?? MatrixScheme.allCases)
        document[path: runRequest + ["properties", "scenario", "enum"]] = pairing.scenarios
        document[path: runRequest + ["properties", "scheme", "enum"]] = pairing.schemes
        document[path: runRequest + ["anyOf"]] = pairing.rules
        document[path: ["components", "schemas", "ReportedOutput", "properties", "route", "enum"]] = routes
        let prefill = ["paths", "/_conformance/runs/{run}/prefill", "get", "parameters"]
        if var parameters = document[path: prefill] as? [[String: Any]],
            let index = parameters.firstIndex(where: { $0["name"] as? String == "route" }),
            var schema = parameters[index]["schema"] as? [String: Any]
        {
            schema["enum"] = routes
            parameters[index]["schema"] = schema
            document[path: prefill] = parameters
        }
        let options: JSONSerialization.WritingOptions = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? JSONSerialization.data(withJSONObject: document, options: options) else {
            return Array(text.utf8)
        }
        return Array(data) + [0x0A]
    }
}

extension ConformanceAPIDocument {
    /// Which scheme each row may be asked for, as JSON Schema: the rule across `scenario` and `scheme`
    /// (``MatrixScheme/exclusion(of:)``) stated as one `anyOf` branch per set of schemes, each listing its rows, so
    /// a request the document allows is one the service takes. A branch without `http` requires `scheme`, as an
    /// absent one means `http`.
    ///
    /// - Returns: the rows that run over at least one of `schemes` (the others are always refused), the schemes' names,
    ///   and the branches.
    static func schemePairing(
        catalogue: [CatalogueEntry], schemes: [MatrixScheme]
    ) -> (scenarios: [String], schemes: [String], rules: [[String: Any]]) {
        var rows: [[String]: [String]] = [:]
        for entry in catalogue {
            let allowed = schemes.filter { $0.exclusion(of: entry) == nil }.map(\.rawValue)
            if !allowed.isEmpty { rows[allowed, default: []].append(entry.name) }
        }
        let rules = rows.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { allowed, names -> [String: Any] in
            var rule: [String: Any] = [
                "properties": ["scenario": ["enum": names.sorted()], "scheme": ["enum": allowed]]
            ]
            if !allowed.contains(MatrixScheme.http.rawValue) { rule["required"] = ["scheme"] }
            return rule
        }
        return (rows.values.joined().sorted(), schemes.map(\.rawValue), rules)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The value at a path of nested objects; setting it makes the objects on the way that are missing.
    fileprivate subscript(path path: [String]) -> Any? {
        get {
            guard let first = path.first else { return nil }
            if path.count == 1 { return self[first] }
            return (self[first] as? [String: Any])?[path: Array(path.dropFirst())]
        }
        set {
            guard let first = path.first else { return }
            if path.count == 1 {
                self[first] = newValue
                return
            }
            var inner = self[first] as? [String: Any] ?? [:]
            inner[path: Array(path.dropFirst())] = newValue
            self[first] = inner
        }
    }
}

extension ConformanceService {
    /// `GET /_conformance/openapi.json`: the API document for this service's catalogue.
    func apiDocument(serverURL: String?) -> [UInt8] {
        ConformanceAPIDocument.served(
            catalogue: catalogue, routes: routeNames, serverURL: serverURL, requiresToken: configuration.token != nil,
            schemes: servedSchemes)
    }

    /// The schemes the attached server has a port for: `http` always, the others with their listeners; all four
    /// before a server is attached.
    var servedSchemes: [MatrixScheme] {
        guard let server else { return MatrixScheme.allCases }
        return MatrixScheme.allCases.filter { scheme in
            switch scheme {
            case .http: true
            case .https: server.tlsPort != nil
            case .h2: server.h2Port != nil
            case .h2c: server.h2cPort != nil
            }
        }
    }
}
