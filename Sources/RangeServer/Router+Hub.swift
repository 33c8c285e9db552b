import Crypto
import Foundation

extension Router {
    /// `/_hub/{target}/{org}/{repo}/resolve/{revision}/{file}`: a stand-in for the Hugging Face Hub's resolve URL, so
    /// `huggingface_hub` (with `HF_ENDPOINT=http://HOST:PORT/_hub/{target}`) can be judged on any row.
    ///
    /// `target` is the base64url (no padding) of a path and query on this server: a scenario's URL or a `/bytes` or
    /// `/files` resource. GET and HEAD are answered alike, as the hub answers a file stored in LFS: a 302 to the
    /// target on another origin of this server (the CDN, which carries the row's faults), with the fields the client
    /// reads from the hub and not from the CDN. Another origin because the client follows a redirect to its own
    /// origin and reads the metadata from where it lands; it reads it from the 302 itself only when the Location is
    /// elsewhere (and leaves Authorization behind, as it does with the real CDN): `localhost` when the client named
    /// anything else, `127.0.0.1` when it named `localhost`, at the port and scheme it came in on. `X-Linked-Etag` and `ETag` are the target's entity tag and `X-Linked-Size` its
    /// length, as its representation is now without the row's faults: the hub tells the truth, the CDN may not.
    /// `X-Repo-Commit` is 40 hex digits derived from the target. Looking spends no scenario attempt.
    func hub(_ request: IncomingRequest, segments: [Substring]) -> ResponsePlan {
        guard segments.count >= 6, segments[3] == "resolve", !segments[4].isEmpty,
            !segments[5...].contains(where: \.isEmpty)
        else {
            return .text(404, "not found: expected /_hub/TARGET/ORG/REPO/resolve/REVISION/FILE")
        }
        guard let target = Self.base64URLDecoded(segments[0]), target.hasPrefix("/"),
            target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F })
        else {
            return .text(
                400, "bad request: hub target '\(segments[0].prefix(80))' is not the base64url of a path on this server"
            )
        }
        let representation: Representation
        do {
            representation = try hubRepresentation(of: target)
        } catch {
            return error.plan
        }
        let digest = SHA256.hash(data: Data(target.utf8)).prefix(20).map { String(format: "%02x", $0) }.joined()
        let host = hostName(request) == "localhost" ? "127.0.0.1" : "localhost"
        let origin =
            request.isTLS
            ? "https://\(host):\(tlsPort.load(ordering: .relaxed))"
            : "http://\(host):\(boundPort.load(ordering: .relaxed))"
        var plan = redirect(request, to: origin + target, code: 302, absolute: false)
        plan.headers += [
            HeaderField("X-Repo-Commit", digest), HeaderField("X-Linked-Size", String(representation.length)),
        ]
        if let tag = representation.entityTagHeader {
            plan.headers += [HeaderField("X-Linked-Etag", tag), HeaderField("ETag", tag)]
        }
        return plan
    }

    /// The representation a hub target names, without faults: a scenario route's resource as its next GET would find
    /// it (version and size), or a resource path with its resource parameters only.
    private func hubRepresentation(of target: String) throws(ResponsePlanFailure) -> Representation {
        let question = target.firstIndex(of: "?")
        let path = question.map { target[..<$0] } ?? target[...]
        let query = question.map { String(target[target.index(after: $0)...]) } ?? ""
        func passthrough(_ query: String) throws(ResponsePlanFailure) -> [(key: String, value: String)] {
            do {
                return try FaultPlan.parse(query: QueryString.parse(query)).passthrough
            } catch {
                throw .init(.text(400, "bad request: hub target: \(error)"))
            }
        }
        switch Route(path: path) {
        case .bytes:
            return try resolve(
                ResourcePath(path, kind: .bytes), passthrough: passthrough(query), versionOverride: nil)
        case .files:
            return try resolve(
                ResourcePath(path, kind: .files), passthrough: passthrough(query), versionOverride: nil)
        case .scenario:
            let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2).map(String.init)
            let routeName = parts.count == 3 ? parts[2] : Scenario.mainRoute
            guard let scenario = scenarios[parts[0]], let route = scenario.routes[routeName] else {
                throw .init(.text(404, "hub target: not found: \(path)"))
            }
            let attempt = counters.currentAttempt(scenario: parts[0], run: parts[1], route: routeName) + 1
            let resource = route.resource
            let mark = resource.firstIndex(of: "?")
            let version = route.effectiveVersion(forAttempt: attempt, base: 0)
            return try resolve(
                ResourcePath(mark.map { resource[..<$0] } ?? resource[...]),
                passthrough: passthrough(mark.map { String(resource[resource.index(after: $0)...]) } ?? ""),
                versionOverride: version > 0 ? UInt64(version) : nil,
                sizeOverride: route.effectiveSize(forAttempt: attempt))
        default:
            throw .init(.text(400, "bad request: hub target \(path) is not a /scenario, /bytes or /files path"))
        }
    }

    /// The bytes of unpadded base64url `text` as UTF-8, or nil when it is not that.
    static func base64URLDecoded(_ text: Substring) -> String? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
