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
    /// - Returns: the document, pretty-printed with sorted keys.
    static func served(
        catalogue: [CatalogueEntry], routes: [String], serverURL: String?, requiresToken: Bool = true
    ) -> [UInt8] {
        guard var document = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return Array(text.utf8)
        }
        let scenarios = catalogue.map(\.name).sorted()
        if let serverURL { document["servers"] = [["url": serverURL]] }
        if !requiresToken { document["security"] = nil }
        document[path: ["components", "schemas", "RunRequest", "properties", "scenario", "enum"]] = scenarios
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
            catalogue: catalogue, routes: routeNames, serverURL: serverURL, requiresToken: configuration.token != nil)
    }
}
