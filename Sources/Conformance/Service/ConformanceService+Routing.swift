import Foundation
import RangeServer

extension ConformanceService {
    /// Answers one request under `/_conformance/`.
    ///
    /// - Parameters:
    ///   - request: the request, body read.
    /// - Returns: the answer; every error is a 4xx with a one-line JSON body `{"error": ...}`.
    public func handle(_ request: CustomRoute.Request) async -> CustomRoute.Response {
        if let refusal = accessRefusal(request) { return refusal }
        var response = await route(request)
        if let token = configuration.token,
            request.queryItems.contains(where: { $0.name == "token" && $0.value == token })
        {
            // A browser given the token once in the address keeps it for the report's links to run pictures.
            response.headers.append(
                ("Set-Cookie", "\(Self.tokenCookie)=\(token); Path=\(Self.prefix); HttpOnly; SameSite=Strict"))
        }
        return response
    }

    /// The cookie a browser keeps the token in.
    static let tokenCookie = "rangecheck-token"

    private func route(_ request: CustomRoute.Request) async -> CustomRoute.Response {
        let segments = request.path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.removingPercentEncoding ?? String($0) }
        let method = request.method == "HEAD" ? "GET" : request.method
        do {
            switch (method, segments.count, segments.first ?? "") {
            case ("GET", 1, "scenarios"):
                return Self.json(200, scenarioListing())
            case ("GET", 1, "openapi.json"):
                let origin = server.map {
                    self.reach(requestHost: request.headers["host"], isTLS: request.isTLS, server: $0).apiOrigin
                }
                return CustomRoute.Response(
                    status: 200, headers: [("Content-Type", "application/json")],
                    body: apiDocument(serverURL: origin))
            case ("DELETE", 2, "runs"):
                return Self.json(200, try deleteRun(segments[1]))
            case ("DELETE", 2, "columns"):
                return Self.json(200, try deleteColumn(segments[1]))
            case ("GET", 1, "ca.pem"):
                guard let pem = server?.certificateAuthorityPEM else {
                    throw ConformanceError.invalidReport("this server has no TLS port (start it with --tls-port)")
                }
                return CustomRoute.Response(
                    status: 200, headers: [("Content-Type", "application/x-pem-file")], body: Array(pem.utf8))
            case ("POST", 1, "runs"):
                let body = try Self.decode(ConformanceAPI.RunRequest.self, from: request.body, what: "a run request")
                return Self.json(201, try createRun(body, host: request.headers["host"], isTLS: request.isTLS))
            case ("GET", 2, "runs"):
                return Self.json(200, try runStatus(segments[1]))
            case ("POST", 3, "runs") where segments[2] == "result":
                let body = try Self.decode(ConformanceAPI.ResultReport.self, from: request.body, what: "a result")
                try checkShape(of: body)
                return Self.json(200, try await judge(run: segments[1], report: body))
            case ("GET", 3, "runs") where segments[2] == "prefill":
                let route = try Self.single("route", in: request.queryItems, fallback: "")
                // A route no scenario has is refused before the run is looked up, as the document's enum refuses it.
                guard routeNames.contains(route) else {
                    throw ConformanceError.invalidReport("route: '\(route)' is not a route of any scenario")
                }
                return try prefill(run: segments[1], route: route)
            case ("GET", 1, "report"), ("GET", 2, "report"):
                let format = request.queryItems.first { $0.name == "format" }?.value ?? "html"
                guard segments.count == 1 || segments[1].isEmpty else {
                    return Self.error(404, "not found: \(request.path)")
                }
                return try report(format: format)
            case ("GET", 3, "report"):
                return try detail(scenario: segments[1], client: segments[2])
            case (_, 1, "scenarios"), (_, 1, "ca.pem"), (_, 1, "openapi.json"), (_, 1, "report"), (_, 3, "report"):
                return Self.methodNotAllowed(request.method, allow: "GET, HEAD")
            case (_, 2, "runs"):
                return Self.methodNotAllowed(request.method, allow: "GET, HEAD, DELETE")
            case (_, 2, "columns"):
                return Self.methodNotAllowed(request.method, allow: "DELETE")
            case (_, 3, "runs") where segments[2] == "prefill":
                return Self.methodNotAllowed(request.method, allow: "GET, HEAD")
            case (_, 1, "runs"):
                return Self.methodNotAllowed(request.method, allow: "POST")
            case (_, 3, "runs") where segments[2] == "result":
                return Self.methodNotAllowed(request.method, allow: "POST")
            default:
                return Self.error(404, "not found: \(request.path)")
            }
        } catch let error as ConformanceError {
            return Self.error(error.status, error.message)
        } catch {
            return Self.error(500, "\(error)")
        }
    }

    /// Nil when the peer may use the API: with a token, the request carries it; without one, the peer is on
    /// loopback.
    private func accessRefusal(_ request: CustomRoute.Request) -> CustomRoute.Response? {
        if let token = configuration.token {
            let query = request.queryItems.first { $0.name == "token" }?.value
            let cookies = (request.headers["cookie"] ?? "").split(separator: ";").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard
                request.headers["authorization"] == "Bearer \(token)" || query == token
                    || cookies.contains("\(Self.tokenCookie)=\(token)")
            else {
                var refusal = Self.error(401, "this server needs Authorization: Bearer <token> (or ?token=<token>)")
                refusal.headers.append(("WWW-Authenticate", "Bearer"))
                return refusal
            }
            return nil
        }
        guard isLoopback(request.peerAddress) else {
            return Self.error(403, "this server answers loopback peers only; start it with --token to allow others")
        }
        return nil
    }

    static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8], what: String) throws(ConformanceError) -> T {
        guard !body.isEmpty else { throw .invalidReport("the body is empty; expected \(what) as JSON") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let DecodingError.keyNotFound(key, context) {
            throw .invalidReport("\(what): missing \(Self.path(context.codingPath + [key]))")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw .invalidReport("\(what): \(Self.located(context))")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw .invalidReport("\(what): \(Self.located(context))")
        } catch {
            throw .invalidReport("the body is not JSON: expected \(what)")
        }
    }

    /// `member.path: what is wrong`, or only what is wrong for the body as a whole.
    private static func located(_ context: DecodingError.Context) -> String {
        context.codingPath.isEmpty
            ? context.debugDescription : "\(path(context.codingPath)): \(context.debugDescription)"
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            .replacingOccurrences(of: ".[", with: "[")
    }

    static func json(_ status: Int, _ value: some Encodable) -> CustomRoute.Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)).map { Array($0) + [0x0A] } ?? Array("{}\n".utf8)
        return CustomRoute.Response(status: status, headers: [("Content-Type", "application/json")], body: body)
    }

    static func error(_ status: Int, _ message: String) -> CustomRoute.Response {
        json(status, ConformanceAPI.ErrorBody(error: message))
    }

    private static func methodNotAllowed(_ method: String, allow: String) -> CustomRoute.Response {
        var response = error(405, "method \(method) not allowed here")
        response.headers.append(("Allow", allow))
        return response
    }
}

extension ConformanceError {
    /// The status the API answers this error with.
    var status: Int {
        if isSameKind(as: .invalidReport("")) { return 400 }
        if isSameKind(as: .notFound("")) { return 404 }
        if isSameKind(as: .conflict("")) { return 409 }
        if isSameKind(as: .gone("")) { return 410 }
        return 500
    }
}
