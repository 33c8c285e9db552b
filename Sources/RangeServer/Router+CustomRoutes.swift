import Foundation

extension Router {
    /// The custom route answering `path`, if any (the first whose prefix matches).
    func customRoute(for path: Substring) -> CustomRoute? {
        configuration.customRoutes.first { $0.matches(path) }
    }

    /// How many body bytes of a request to `target` are kept: its custom route's limit, else none.
    func bodyLimit(for target: String) -> Int {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return customRoute(for: path)?.maximumBodySize ?? 0
    }

    /// A plan whose real answer the custom route's handler makes, asynchronously (see `ResponsePlan.deferred`).
    func deferredPlan(for request: IncomingRequest, route: CustomRoute) -> ResponsePlan {
        var plan = ResponsePlan(status: 500)
        plan.journaled = false
        if request.bodyTooLarge {
            plan = .text(413, "request body larger than \(route.maximumBodySize) bytes")
            plan.journaled = false
            return plan
        }
        let (path, query) = request.pathAndQuery
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.lowercased()] = field.value }
        let custom = CustomRoute.Request(
            method: request.method, path: String(path), query: String(query), headers: headers, body: request.body,
            peerAddress: request.peerAddress, isTLS: request.isTLS)
        let handler = route.handler
        plan.deferred = {
            let response = await handler(custom)
            return ResponsePlan(
                status: response.status, headers: response.headers.map { HeaderField($0.name, $0.value) },
                body: response.body.isEmpty ? .empty : .literal(response.body))
        }
        return plan
    }
}
