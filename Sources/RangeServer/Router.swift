import HTTPVocabulary
import NIOConcurrencyHelpers
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Maps requests to response plans. Everything it decides is computed from the request value and the
/// server's state; it never touches a socket.
final class Router: Sendable {
    let configuration: RangeServer.Configuration
    /// The real path of the served root, with symlinks resolved, for containment checks.
    let rootPath: String
    let scenarios: [String: Scenario]
    /// The attempts of each scenario run, kept under ``RangeServer/Configuration/runRetention``.
    let counters: ScenarioCounters
    /// Numbers the requests carrying `probability`, per target, for their draws.
    let faultDraws: FaultDrawCounter
    /// The responses in progress per peer and target, for `connection-cap`.
    let connectionCaps = ConnectionCapCounter()
    let journal: Journal
    let digests = DigestCache()
    /// `/files/` representations already resolved, revalidated per request by one `stat`.
    let files = RepresentationCache(capacity: RepresentationCache.capacityForDescriptorLimit())
    /// The gzip encodings the `encoding` fault serves.
    let gzipped = GzipEncoding()
    /// What the fault hooks read and change (see ``FaultHooks``).
    let faultContext: FaultContext
    /// The root, open, so files are opened beneath it (see `OpenFile.opening`); -1 if it could not be opened.
    private let rootDescriptor: Int32
    /// The real port once bound, for absolute redirect locations when the request has no Host.
    let boundPort = Atomic<Int>(0)
    /// The blackhole listener's port once open; 0 when there is none.
    let blackholePort = Atomic<Int>(0)
    /// The TLS port once open; 0 when there is none.
    let tlsPort = Atomic<Int>(0)
    /// The ports of the TLS fault listeners that are open, by fault name (`handshake-stall`, ...).
    let tlsFaultPorts = NIOLockedValueBox<[String: Int]>([:])

    init(configuration: RangeServer.Configuration, rootPath: String, scenarios: [String: Scenario], journal: Journal) {
        self.configuration = configuration
        self.rootPath = rootPath
        self.scenarios = scenarios
        self.journal = journal
        counters = ScenarioCounters(retention: configuration.runRetention, clock: configuration.clock)
        faultDraws = FaultDrawCounter(retention: configuration.runRetention, clock: configuration.clock)
        rootDescriptor = open(rootPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        faultContext = FaultContext(
            connectionCaps: connectionCaps, gzipped: gzipped, wallClock: { Int64(time(nil)) })
    }

    deinit {
        if rootDescriptor >= 0 { _ = close(rootDescriptor) }
    }

    /// The plan for one request.
    func plan(for request: IncomingRequest) -> ResponsePlan {
        let (path, query) = request.pathAndQuery
        guard path.utf8.first == UInt8(ascii: "/") else {
            return .text(404, "not found: \(request.target)")
        }
        if !configuration.customRoutes.isEmpty, let custom = customRoute(for: path) {
            return deferredPlan(for: request, route: custom)
        }
        guard let route = Route(path: path) else {
            return .text(404, "not found: \(path)")
        }
        // The segments are split out only for the routes that read them, so a `/files` or `/bytes` request
        // allocates no array.
        var laterSegments: [Substring] {
            Array(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2))
        }
        if route != .control && request.method != "GET" && request.method != "HEAD" {
            return .text(405, "method \(request.method) not allowed", headers: [HeaderField("Allow", "GET, HEAD")])
        }
        switch route {
        case .index:
            return indexPage(for: request)
        case .healthz:
            return .text(200, "ok")
        case .bytes:
            return serveResource(request, resource: ResourcePath(path, kind: .bytes), query: query)
        case .files:
            return serveResource(request, resource: ResourcePath(path, kind: .files), query: query)
        case .redirect:
            return redirectChain(request, segments: laterSegments)
        case .redirectLoop:
            return redirectLoop(request)
        case .redirectTo:
            return redirectTo(request)
        case .scenario:
            return serveScenario(request, segments: laterSegments)
        case .control:
            return control(request, segments: laterSegments)
        case .hub:
            return hub(request, segments: laterSegments)
        }
    }

    /// The first key set in `plan` that the exchange's front end cannot carry out, as a 400's one line naming it
    /// with its value; nil when it can carry out all of them.
    static func refusal(of plan: FaultPlan, on connection: any ExchangeConnection) -> String? {
        for key in FaultKey.all where key.isSet(plan) {
            guard let reason = connection.refusal(of: key) else { continue }
            let value = key.read(plan).map { "=\($0)" } ?? ""
            return "bad request: parameter '\(key.name)\(value)' \(reason)"
        }
        return nil
    }

    // MARK: - Resources

    /// Serves `/bytes/...` or `/files/...` with the faults in `query` layered over `base`.
    func serveResource(
        _ request: IncomingRequest, resource: ResourcePath, query: Substring, base: FaultPlan = FaultPlan(),
        versionOverride: UInt64? = nil, sizeOverride: UInt64? = nil, scenario: ScenarioContext? = nil
    ) -> ResponsePlan {
        var effective: FaultPlan
        let passthrough: [(key: String, value: String)]
        if query.isEmpty {
            // Most requests carry no query: skip the parse and its allocations, and the merge (no faults over
            // `base` are `base`).
            (effective, passthrough) = (base, [])
        } else {
            do {
                let parsed = try FaultPlan.parse(query: QueryString.parse(String(query)))
                (effective, passthrough) = (parsed.plan.merged(over: base), parsed.passthrough)
            } catch {
                return .text(400, "bad request: \(error)")
            }
        }
        // Looked at once (the plan is about 50 fields): a plan with a probability stays non-empty after the draw below,
        // since `chanceOnly` keeps it.
        let faulted = !effective.isEmpty
        if faulted, let refused = Self.refusal(of: effective, on: request.connection) {
            var plan = ResponsePlan.text(400, refused)
            plan.scenario = scenario
            return plan
        }
        let representation: Representation
        do {
            representation = try resolve(
                resource, passthrough: passthrough, versionOverride: versionOverride, sizeOverride: sizeOverride,
                readBy: request.readBy)
        } catch {
            var plan = error.plan
            plan.scenario = scenario
            return plan
        }
        var faultsApplied: Bool?
        if let probability = effective.probability {
            let draw = faultDraws.next(for: request.target)
            let applies = FaultChance.applies(millionths: probability, seed: effective.faultSeed ?? 0, draw: draw)
            faultsApplied = applies
            if !applies { effective = effective.chanceOnly }
        }
        // An empty plan visits no hook and builds no exchange: most requests carry no fault.
        var exchange =
            faulted
            ? FaultExchange(request: request, faults: effective, names: effective.appliedNames, context: faultContext)
            : nil
        var plan = respond(
            request, fields: request.conditionalFields, with: representation, faulted: faulted, exchange: &exchange)
        // Assigned only when there is one: overwriting the empty field costs an outlined destroy of it.
        if let scenario { plan.scenario = scenario }
        if let faultsApplied { plan.faultsApplied = faultsApplied }
        if faulted, let capSlot = exchange?.capSlot { plan.capSlot = capSlot }
        return plan
    }

    /// The representation `resource` names, or the error response when it names none.
    ///
    /// - Parameters:
    ///   - sizeOverride: the length a scenario step gives a `/bytes/` resource instead of its path's.
    ///   - readBy: when the request had been read from its socket, if the front end knows (`IncomingRequest.readBy`).
    func resolve(
        _ resource: ResourcePath, passthrough: [(key: String, value: String)], versionOverride: UInt64?,
        sizeOverride: UInt64? = nil, readBy: ContinuousClock.Instant? = nil
    ) throws(ResponsePlanFailure) -> Representation {
        let path = resource.path
        if resource.kind == .bytes {
            let sizeText = resource.rest
            guard let size = ByteSize.parse(String(sizeText)) else {
                throw .init(.text(400, "bad request: size '\(sizeText)' is not a byte count such as 1024, 64K or 1G"))
            }
            var seed: UInt64 = 0
            var version: UInt64 = 1
            for (key, value) in passthrough {
                switch key {
                case "seed":
                    guard let parsed = UInt64(value) else {
                        throw .init(.text(400, "bad request: seed '\(value)' is not a non-negative integer"))
                    }
                    seed = parsed
                case "version":
                    guard let parsed = UInt64(value), parsed >= 1 else {
                        throw .init(.text(400, "bad request: version '\(value)' is not a positive integer"))
                    }
                    version = parsed
                default:
                    throw .init(.text(400, "bad request: unknown parameter '\(key)' for /bytes"))
                }
            }
            return .generated(length: sizeOverride ?? size, seed: seed, version: versionOverride ?? version)
        }
        if let key = passthrough.first?.key {
            throw .init(.text(400, "bad request: unknown parameter '\(key)' for /files"))
        }
        let encoded = resource.rest
        let key = String(encoded)
        if let cached = files.representation(forKey: key, root: rootDescriptor, readBy: readBy) { return cached }
        guard let components = SafePath.components(encoded) else {
            throw .init(.text(404, "not found: \(path)"))
        }
        let relativePath = components.joined(separator: "/")
        let lexicalPath = rootPath + "/" + relativePath
        guard let real = realPath(lexicalPath) else {
            throw .init(.text(404, "not found: \(path)"))
        }
        // Symlinks are followed only while they stay under the root. Bytes, not Characters: String.hasPrefix
        // treats canonically equivalent names (precomposed and decomposed "é") as equal, the file system does not.
        guard real.utf8.starts(with: (rootPath + "/").utf8),
            let file = OpenFile.opening(realPath: real, rootPath: rootPath, rootDescriptor: rootDescriptor)
        else {
            throw .init(.text(404, "not found: \(path)"))
        }
        let representation = Representation.file(file)
        files.store(
            representation, file: file, lexicalPath: lexicalPath, relativePath: relativePath, forKey: key,
            root: rootDescriptor, symlinkFree: real.utf8.elementsEqual(lexicalPath.utf8))
        return representation
    }

    /// Makes the RFC 9110 decision for a representation, with the faults of `exchange` applied around it at their
    /// stages (``FaultHooks``); nil `exchange` is a plan with no fault.
    ///
    /// - Parameters:
    ///   - fields: `request.conditionalFields`, read once: the digest field is read from it too.
    ///   - faulted: whether `exchange` is there. Every look at the optional exchange copied it, nil or not (four
    ///     outlined copies, about 640 instructions per request, callgrind); the flag is looked at first.
    func respond(
        _ request: IncomingRequest, fields: (conditional: ConditionalRequest, wantReprDigest: String?),
        with resolved: Representation, faulted: Bool, exchange: inout FaultExchange?
    ) -> ResponsePlan {
        var representation = resolved
        var options = DecisionOptions(maxRanges: configuration.maxRanges)
        if faulted, var faulted = exchange {
            defer { exchange = faulted }
            let faults = faulted.faults
            do throws(ResponsePlanFailure) {
                for key in FaultKey.representationStage where key.isSet(faults) {
                    try key.hooks.representation!(&representation, &faulted)
                }
            } catch {
                return error.plan
            }
            for key in FaultKey.answerStage where key.isSet(faults) {
                guard var answer = key.hooks.answer!(&faulted) else { continue }
                for key in FaultKey.headerStage where key.hooks.headersOnEveryAnswer && key.isSet(faults) {
                    key.hooks.headers!(&answer, nil, faulted)
                }
                return answer
            }
            for key in FaultKey.decisionStage where key.isSet(faults) { key.hooks.decision!(&options, faulted) }
        }
        // Room for every field a 200 or single-part 206 carries, so the list is allocated once.
        var headers: [HeaderField] = []
        headers.reserveCapacity(6)
        headers.append(HeaderField("Accept-Ranges", "bytes"))
        if let tag = representation.entityTagHeader { headers.append(HeaderField("ETag", tag)) }
        if let date = representation.lastModifiedHeader { headers.append(HeaderField("Last-Modified", date)) }

        var outcome = RequestDecision.outcome(
            fields.conditional, representation: representation.metadata, options: options)
        if faulted, let exchange {
            for key in FaultKey.outcomeStage where key.isSet(exchange.faults) {
                key.hooks.outcome!(&outcome, representation, fields.conditional, exchange)
            }
        }
        var plan: ResponsePlan
        switch outcome {
        case .notModified:
            plan = ResponsePlan(status: 304, headers: headers)
        case .preconditionFailed:
            plan = .text(412, "precondition failed", headers: headers)
        case .rangeNotSatisfiable:
            let contentRange = ContentRange.unsatisfied(completeLength: representation.length)
            plan = .text(416, "range not satisfiable", headers: headers + [HeaderField("Content-Range", contentRange)])
        case .full:
            headers.append(HeaderField("Content-Type", representation.contentType))
            plan = ResponsePlan(
                status: 200, headers: headers,
                body: .content(representation.source, offset: 0, length: representation.length))
        case .singleRange(let range):
            headers.append(HeaderField("Content-Type", representation.contentType))
            headers.append(
                HeaderField("Content-Range", ContentRange.headerValue(range, completeLength: representation.length)))
            plan = ResponsePlan(
                status: 206, headers: headers,
                body: .content(
                    representation.source, offset: range.lowerBound, length: range.upperBound - range.lowerBound + 1))
        case .multipleRanges(let ranges):
            plan = multipartPlan(request, ranges, of: representation, headers: headers)
        }
        if faulted, let exchange {
            for key in FaultKey.headerStage where key.isSet(exchange.faults) {
                key.hooks.headers!(&plan, representation, exchange)
            }
        }
        // Only a 200 or 206 carries the representation, so only they get a digest, as the last field; asked for only
        // when the request wants one (passing the fields inout on every request cost about 500 instructions).
        if let want = fields.wantReprDigest, plan.status == 200 || plan.status == 206 {
            plan.pendingDigest = addDigest(want, representation, to: &plan.headers)
        }
        if faulted, let exchange {
            apply(exchange.faults, named: exchange.names, to: &plan)
            for key in FaultKey.bodyStage where key.isSet(exchange.faults) { key.hooks.body!(&plan, exchange) }
        }
        return plan
    }

    /// The body stage: the delivery faults (`FaultKey.bodyFault`, `delay`, `chunked`) on a 200 or 206 plan (any
    /// other status keeps only the delay), and the applied faults, `names`, recorded in the plan: on another status
    /// only those that need no body (`FaultKey.needsBody`).
    private func apply(_ faults: FaultPlan, named names: [String], to plan: inout ResponsePlan) {
        if plan.status == 200 || plan.status == 206 {
            plan.delivery = Delivery(
                delay: faults.delay, chunked: faults.chunked, chunkedWithLength: faults.chunkedWithLength,
                faults: faults.bodyFaults)
            plan.faults = names
        } else {
            plan.delivery.delay = faults.delay
            plan.faults = names.filter { !FaultKey.needsBody(name: $0) }
        }
    }

    /// Appends `Repr-Digest` when the client asked for sha-256 (RFC 9530) and the digest is known; when it is not
    /// computed yet, returns where it goes, for the daemon to compute off the pool thread.
    ///
    /// - Parameters:
    ///   - want: the request's `Want-Repr-Digest` field.
    private func addDigest(
        _ want: String, _ representation: Representation, to headers: inout [HeaderField]
    ) -> PendingDigest? {
        guard wantsSHA256(want), let key = representation.digestKey else { return nil }
        guard let digest = digests.digest(forKey: key) else {
            return PendingDigest(representation: representation, key: key, cache: digests, headerIndex: headers.count)
        }
        if !digest.isEmpty { headers.append(reprDigestField(digest)) }
        return nil
    }

    /// Whether `Want-Repr-Digest` lists sha-256 with a preference above 0 ("not acceptable").
    private func wantsSHA256(_ header: String) -> Bool {
        WantReprDigest(parsing: header)?.accepts("sha-256") ?? false
    }

    // MARK: - Redirects

    private func redirectChain(_ request: IncomingRequest, segments: [Substring]) -> ResponsePlan {
        guard let hops = Int(segments[0]), hops >= 1, hops <= 1000 else {
            return .text(400, "bad request: redirect count '\(segments[0])' must be an integer from 1 to 1000")
        }
        let target = segments.dropFirst().joined(separator: "/")
        let query = QueryString.parse(String(request.rawQuery))
        var code = 302
        var absolute = false
        var carried: [(key: String, value: String)] = []
        for (key, value) in query {
            switch key {
            case "redirect-code":
                guard let parsed = Int(value), [301, 302, 303, 307, 308].contains(parsed) else {
                    return .text(400, "bad request: redirect-code '\(value)' must be 301, 302, 303, 307 or 308")
                }
                code = parsed
            case "redirect-location":
                guard value == "absolute" || value == "relative" else {
                    return .text(400, "bad request: redirect-location '\(value)' must be absolute or relative")
                }
                absolute = value == "absolute"
            default:
                carried.append((key, value))
            }
        }
        let location: String
        if hops == 1 {
            location = "/" + target + encodeQuery(carried)
        } else {
            location = "/redirect/\(hops - 1)/" + target + "?" + String(request.rawQuery)
        }
        return redirect(request, to: location, code: code, absolute: absolute)
    }

    private func redirectLoop(_ request: IncomingRequest) -> ResponsePlan {
        let hop = QueryString.parse(String(request.rawQuery)).first { $0.key == "hop" }.flatMap { Int($0.value) } ?? 0
        return redirect(request, to: "/redirect-loop?hop=\(hop + 1)", code: 302, absolute: false)
    }

    /// A redirect response; `absolute` makes the Location carry scheme and authority from the Host header.
    func redirect(_ request: IncomingRequest, to location: String, code: Int, absolute: Bool) -> ResponsePlan {
        var value = location
        if absolute {
            let port = request.isTLS ? tlsPort.load(ordering: .relaxed) : boundPort.load(ordering: .relaxed)
            let host = request.header("host") ?? "\(configuration.host):\(port)"
            value = (request.isTLS ? "https://" : "http://") + host + location
        }
        return .text(code, "redirecting to \(value)", headers: [HeaderField("Location", value)])
    }
}

/// Wraps an error response so resolution can return `Result`.
struct ResponsePlanFailure: Error {
    var plan: ResponsePlan
    init(_ plan: ResponsePlan) { self.plan = plan }
}
