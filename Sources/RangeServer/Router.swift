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
    let files = RepresentationCache(capacity: 256)
    /// The gzip encodings the `encoding` fault serves.
    let gzipped = GzipEncoding()
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
        }
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
        if request.isTLS, let badChunkAfter = effective.badChunkAfter {
            // The malformed line is written to the socket past libmicrohttpd, which TLS cannot allow.
            var plan = ResponsePlan.text(
                400,
                "bad request: parameter 'bad-chunk-after=\(ByteSize.format(badChunkAfter))' works on plain HTTP only "
                    + "(it writes to the socket past the TLS layer); use the http port")
            plan.scenario = scenario
            return plan
        }
        var representation: Representation
        do {
            representation = try resolve(
                resource, passthrough: passthrough, versionOverride: versionOverride, sizeOverride: sizeOverride)
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
        if effective.lastModifiedCollides {
            guard case .generated(let generator) = representation.source else {
                var plan = ResponsePlan.text(
                    400,
                    "bad request: parameter 'lm-collide=1' works on /bytes/ resources only (a file has one version)")
                plan.scenario = scenario
                return plan
            }
            representation = .generated(
                length: representation.length, seed: generator.seed, version: generator.version,
                lastModifiedVersion: max(1, generator.version - 1))
        }
        var capSlot: String?
        if let cap = effective.connectionCap {
            let key = ConnectionCapCounter.key(peerAddress: request.peerAddress, target: request.target)
            guard connectionCaps.acquire(key, limit: cap) else {
                var plan = ResponsePlan.text(
                    503, "503 Service Unavailable (injected: connection-cap=\(cap), all taken for this client and URL)",
                    headers: [
                        HeaderField(
                            "Retry-After", (effective.retryAfter ?? .seconds(1)).headerValue(now: Int64(time(nil))))
                    ])
                plan.faults = effective.appliedNames
                plan.setFields(of: effective)
                if let scenario { plan.scenario = scenario }
                if let faultsApplied { plan.faultsApplied = faultsApplied }
                return plan
            }
            capSlot = key
        }
        var encodingFields: [HeaderField] = []
        var encodedIgnoresRange = false
        if let encoding = effective.encoding {
            // Every answer from a URL that negotiates says so, identity ones too, so caches keep them apart.
            encodingFields.append(HeaderField("Vary", "Accept-Encoding"))
            if encoding == .gzipAlways || AcceptEncoding.allowsGzip(request.header("accept-encoding")) {
                guard let encoded = gzipped.encoded(representation) else {
                    let limit = ByteSize.format(GzipEncoding.maximumIdentityLength)
                    return .text(
                        400, "bad request: encoding=\(encoding.rawValue) needs a representation of at most \(limit)")
                }
                representation = encoded
                encodingFields.append(HeaderField("Content-Encoding", "gzip"))
                encodedIgnoresRange = encoding == .gzipIgnoresRange
            }
        }
        let fields = request.conditionalFields
        var plan = respond(
            request, fields: fields, with: representation.applying(effective), faults: effective,
            ignoringRange: encodedIgnoresRange)
        if !encodingFields.isEmpty, plan.status == 200 || plan.status == 206 || plan.status == 304 {
            plan.headers += encodingFields
        }
        if effective.contentType != nil || effective.contentDisposition != nil { plan.setFields(of: effective) }
        // Assigned only when there is one: overwriting the empty field costs an outlined destroy of it.
        if let scenario { plan.scenario = scenario }
        if let faultsApplied { plan.faultsApplied = faultsApplied }
        if let capSlot { plan.capSlot = capSlot }
        return plan
    }

    /// The representation `resource` names, or the error response when it names none.
    ///
    /// - Parameters:
    ///   - sizeOverride: the length a scenario step gives a `/bytes/` resource instead of its path's.
    private func resolve(
        _ resource: ResourcePath, passthrough: [(key: String, value: String)], versionOverride: UInt64?,
        sizeOverride: UInt64? = nil
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
        if let cached = files.representation(forKey: key, root: rootDescriptor) { return cached }
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
        files.store(representation, file: file, lexicalPath: lexicalPath, relativePath: relativePath, forKey: key)
        return representation
    }

    /// Applies the RFC 9110 decision and the faults to a representation.
    ///
    /// - Parameters:
    ///   - fields: `request.conditionalFields`, read once by the caller, which needs the digest field too.
    ///   - ignoringRange: Serve the whole representation whatever `Range` asks (`encoding=gzip-ignores-range`).
    func respond(
        _ request: IncomingRequest, fields: (conditional: ConditionalRequest, wantReprDigest: String?),
        with representation: Representation, faults: FaultPlan, ignoringRange: Bool = false
    ) -> ResponsePlan {
        // Most requests carry no fault: skip listing the sixteen keys' canonical values.
        let hasFaults = !faults.isEmpty
        let faultNames = hasFaults ? faults.appliedNames : []
        if let name = faults.rejectHeader, request.header(name) != nil {
            return rejection(of: name, faults: faults, named: faultNames)
        }
        if let status = faults.status {
            var headers: [HeaderField] = []
            if let retryAfter = faults.retryAfter {
                headers.append(HeaderField("Retry-After", retryAfter.headerValue(now: Int64(time(nil)))))
            }
            var plan = ResponsePlan.text(status, "\(status) \(reasonPhrase(status)) (injected)", headers: headers)
            plan.faults = faultNames
            plan.delivery.delay = faults.delay
            return plan
        }
        if let head = faults.head, head != .stall, request.method == "HEAD" {
            var plan =
                head == .refuse405
                ? ResponsePlan.text(405, "method HEAD not allowed (injected)", headers: [HeaderField("Allow", "GET")])
                : ResponsePlan.text(403, "HEAD forbidden (injected)")
            plan.faults = faultNames
            plan.delivery.delay = faults.delay
            return plan
        }
        if faults.htmlPage { return htmlPage(faults: faults, named: faultNames) }
        let options = DecisionOptions(
            maxRanges: configuration.maxRanges, ignoreRange: faults.ignoreRange || ignoringRange,
            ignoreIfRange: faults.ignoreIfRange,
            ifRangeDateOnly: faults.ifRangeDateOnly
        )
        // Room for every field a 200 or single-part 206 carries, so the list is allocated once.
        var headers: [HeaderField] = []
        headers.reserveCapacity(6)
        if !faults.noAcceptRanges { headers.append(HeaderField("Accept-Ranges", "bytes")) }
        if let tag = representation.entityTagHeader { headers.append(HeaderField("ETag", tag)) }
        if let date = representation.lastModifiedHeader { headers.append(HeaderField("Last-Modified", date)) }

        var plan: ResponsePlan
        var outcome = RequestDecision.outcome(
            fields.conditional, representation: representation.metadata, options: options)
        if faults.unsolicited206, case .full = outcome, fields.conditional.range == nil, representation.length > 0 {
            // As if the request had asked for bytes=0-, so the faults that shape a single-range 206 apply to it too.
            outcome = .singleRange(0...representation.length - 1)
        }
        switch outcome {
        case .notModified:
            plan = ResponsePlan(status: 304, headers: headers)
        case .preconditionFailed:
            plan = .text(412, "precondition failed", headers: headers)
        case .rangeNotSatisfiable:
            plan = unsatisfiable(representation, shape: faults.unsatisfiableShape, headers: headers)
        case .full:
            headers.append(HeaderField("Content-Type", representation.contentType))
            if faults.contentRangeOn200 && representation.length > 0 {
                headers.append(
                    HeaderField(
                        "Content-Range",
                        ContentRange.headerValue(0...representation.length - 1, completeLength: representation.length)))
            }
            plan = ResponsePlan(
                status: 200, headers: headers,
                body: .content(representation.source, offset: 0, length: representation.length))
        case .singleRange(var range):
            if let misalign = faults.misalignRange {
                range = (range.lowerBound - min(misalign, range.lowerBound))...range.upperBound
            }
            if let cap = faults.rangeCap, cap > 0, range.upperBound - range.lowerBound >= cap {
                range = range.lowerBound...(range.lowerBound + cap - 1)
            }
            if faults.multipartAlways {
                plan = multipartPlan(request, [range], of: representation, headers: headers)
                break
            }
            headers.append(HeaderField("Content-Type", representation.contentType))
            let contentRange =
                faults.contentRangeRaw
                ?? (faults.contentRangeTotalUnknown
                    ? "bytes \(range.lowerBound)-\(range.upperBound)/*"
                    : ContentRange.headerValue(range, completeLength: representation.length))
            headers.append(HeaderField("Content-Range", contentRange))
            let length = range.upperBound - range.lowerBound + 1
            plan = ResponsePlan(
                status: 206, headers: headers,
                body: .content(representation.source, offset: range.lowerBound, length: length))
        case .multipleRanges(let ranges):
            plan = multipartPlan(request, ranges, of: representation, headers: headers)
        }
        // Only a 200 or 206 carries the representation, so only they get a digest, as the last field; asked for only
        // when the request wants one (passing the fields inout on every request cost about 500 instructions).
        if let want = fields.wantReprDigest, plan.status == 200 || plan.status == 206 {
            plan.pendingDigest = addDigest(want, representation, to: &plan.headers)
        }
        if hasFaults {
            apply(faults, named: faultNames, to: &plan)
            if request.method == "HEAD" { applyHeadFaults(faults, to: &plan) }
        }
        return plan
    }

    /// The faults that make HEAD disagree with GET, on the plan HEAD would otherwise get: `head=stall` withholds the
    /// answer, `head-length-delta` moves the Content-Length libmicrohttpd declares from the body's length (the body
    /// of a HEAD is never read, so the length is all that changes).
    private func applyHeadFaults(_ faults: FaultPlan, to plan: inout ResponsePlan) {
        if faults.head == .stall { plan.delivery.silence = FaultPlan.defaultStallDuration }
        if let delta = faults.headLengthDelta, case .content(let source, let offset, let length) = plan.body {
            let declared = delta < 0 ? length - min(length, delta.magnitude) : length &+ delta.magnitude
            plan.body = .content(source, offset: offset, length: declared)
        }
    }

    /// A 416 for `representation`: `Content-Range: bytes */LENGTH` and a text body, or the `416-shape` fault's.
    private func unsatisfiable(
        _ representation: Representation, shape: FaultPlan.UnsatisfiableShape?, headers: [HeaderField]
    ) -> ResponsePlan {
        let contentRange = HeaderField("Content-Range", ContentRange.unsatisfied(completeLength: representation.length))
        switch shape {
        case nil:
            return .text(416, "range not satisfiable", headers: headers + [contentRange])
        case .noContentRange:
            return .text(416, "range not satisfiable", headers: headers)
        case .htmlBody:
            return ResponsePlan(
                status: 416,
                headers: [HeaderField("Content-Type", "text/html; charset=utf-8")] + headers + [contentRange],
                body: .literal(Array(Self.unsatisfiablePage.utf8)))
        }
    }

    /// The error page of `416-shape=html-body`, like a CDN's: a client that appends it to a file corrupts the file.
    static let unsatisfiablePage = """
        <!DOCTYPE html>
        <html><head><title>416 Requested Range Not Satisfiable</title></head>
        <body><h1>416 Requested Range Not Satisfiable</h1><p>The requested range is not available.</p>
        <hr><address>rangeserver (416-shape=html-body)</address></body></html>

        """

    /// Adds the delivery faults to a 200 or 206 plan (any other status keeps only the delay) and records the
    /// applied faults, `names`, in the plan: on another status only those that need no body (`FaultKey.needsBody`).
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
