import RangeServer

/// A ``RunTrace`` as a results file keeps it: the same facts with the defaults left out and spans as two-number
/// arrays, so a whole column of runs stays small enough to commit and to embed in the results page, whose script
/// draws the picture from it.
///
/// What is left out can be told again: the method when it is `GET`, the route when it is the scenario's own URL, the
/// outcome when the response was complete, the body bytes sent when `sent` places them, the start (launch) when it
/// is the first, the spans a Range asked for when they are what its header says, an output's name when it is the
/// scenario's own (`SCENARIO.bin`), empty lists; the request's number is its place in the list, and connections are
/// numbered from 1 in the order they first appear (the server's own numbers say nothing more). A request's keys are short (the table
/// in docs/conformance.md, "The results table"): a column of runs holds thousands of requests.
/// ``runTrace(scenario:description:)`` gives the ``RunTrace`` back, equal to the original but for the server's
/// arrival numbers (each request's number stands in for it).
package struct CompactTrace: Codable, Hashable, Sendable {
    /// The resource's length.
    public var length: UInt64
    /// Every version the scenario can serve.
    public var versions: [Int]
    /// The version a successful output must equal.
    public var expected: Int
    /// From the first arrival to the last end, in milliseconds.
    public var span: Int64
    /// Whether the requests know which start of the client made them (a subprocess client's; nil for one in
    /// process): then a request without `l` came from the first.
    public var launches: Bool?
    /// The requests in arrival order; of a run with more than ``requestLimit``, the first ``keptFirst`` and the
    /// last ``keptLast``, with ``omitted`` saying what went between.
    public var requests: [Request]
    /// The outputs in the job's order.
    public var outputs: [Output]
    /// The requests left out of a long run (a client asking again ten times a second until the harness's limit),
    /// nil when none was.
    public var omitted: Omission?

    private enum CodingKeys: String, CodingKey {
        case length = "len", versions = "vs", expected = "exp", span = "ms", launches, requests = "req"
        case outputs = "out", omitted
    }

    /// The most requests a trace keeps: a picture of thousands of rows says no more than its first and last ones, and
    /// a single axel run can make 4,700 requests.
    public static let requestLimit = 60
    /// How many of the first requests a long run keeps.
    public static let keptFirst = 40
    /// How many of the last requests a long run keeps.
    public static let keptLast = 20

    /// The requests a long run's trace leaves out: after which request, how many, and their statuses.
    public struct Omission: Codable, Hashable, Sendable {
        /// The number of the last request kept before them.
        public var after: Int
        /// How many were left out.
        public var count: Int
        /// How many of them had each status, by status.
        public var statuses: [String: Int]
        /// When the first of them arrived and the last ended, on the run's clock, in milliseconds.
        public var time: [Int64]
    }

    /// One request: only what differs from the common case is present.
    public struct Request: Codable, Hashable, Sendable {
        /// The method, when not `GET`.
        public var method: String?
        /// The response status.
        public var status: Int
        /// The scenario route, when a named one (the scenario's own URL has none here).
        public var route: String?
        /// The request target, when the route is not known.
        public var target: String?
        /// The attempt at the route.
        public var attempt: Int?
        /// The connection.
        public var connection: Int
        /// The Range header as sent.
        public var range: String?
        /// The spans the Range asked for, `[start, end)` each.
        public var asked: [[UInt64]]?
        /// The If-Range header as sent.
        public var ifRange: String?
        /// Where the body bytes sent sit in the resource, `[start, end)`.
        public var sent: [UInt64]?
        /// Body bytes handed to the connection.
        public var bytes: UInt64?
        /// Body bytes planned, when not the same as sent.
        public var planned: UInt64?
        /// The parts of `sent` sent before in this run, `[start, end)` each.
        public var twice: [[UInt64]]?
        /// How the response ended, when it did not complete.
        public var outcome: String?
        /// The faults applied.
        public var faults: [String]?
        /// Arrival and end on the run's clock, in milliseconds.
        public var time: [Int64]
        /// The response's ETag, else its Last-Modified.
        public var validator: String?
        /// The version the response served.
        public var version: Int?
        /// The response's Content-Encoding.
        public var encoding: String?
        /// A redirect's Location.
        public var location: String?
        /// Which start of the client made it, when not the first.
        public var launch: Int?
        /// True when that start was a harness re-run.
        public var rerun: Bool?

        private enum CodingKeys: String, CodingKey {
            case method = "m", status = "s", route = "r", target = "u", attempt = "a", connection = "c"
            case range = "rg", asked = "ask", ifRange = "ir", sent = "x", bytes = "n", planned = "p", twice = "tw"
            case outcome = "o", faults = "f", time = "t", validator = "val", version = "v", encoding = "enc"
            case location = "loc", launch = "l", rerun = "rr"
        }
    }

    /// One output: its name (absent for `SCENARIO.bin`), its size and which version each part holds (`[start, end, version]`, the version
    /// null for bytes matching none); `missing` when the file does not exist.
    public struct Output: Codable, Hashable, Sendable {
        /// The file's name, when not `SCENARIO.bin`.
        public var name: String?
        /// True when the file does not exist.
        public var missing: Bool?
        /// Its size.
        public var size: UInt64
        /// `[start, end, version]` per run of blocks of one version; the version is null for bytes matching none.
        public var map: [[UInt64?]]
    }

    /// The compact form of a trace.
    ///
    /// - Parameters:
    ///   - trace: the run's trace; of more than ``requestLimit`` requests, the first ``keptFirst`` and the last
    ///     ``keptLast`` are kept.
    public init(_ trace: RunTrace) {
        length = trace.resourceLength
        versions = trace.versions
        expected = trace.expectedVersion
        span = trace.spanMilliseconds
        launches = trace.requests.contains { $0.launch != nil } ? true : nil
        var connections: [Int: Int] = [:]
        for request in trace.requests where connections[request.connection] == nil {
            connections[request.connection] = connections.count + 1
        }
        var kept = trace.requests
        if kept.count > Self.requestLimit {
            let left = kept[Self.keptFirst..<(kept.count - Self.keptLast)]
            var statuses: [String: Int] = [:]
            for request in left { statuses[String(request.status), default: 0] += 1 }
            omitted = Omission(
                after: Self.keptFirst, count: left.count, statuses: statuses,
                time: [left.first?.startMilliseconds ?? 0, left.map(\.endMilliseconds).max() ?? 0])
            kept = Array(kept.prefix(Self.keptFirst)) + Array(kept.suffix(Self.keptLast))
        }
        requests = kept.map { request in
            Request(
                method: request.method == "GET" ? nil : request.method, status: request.status,
                route: request.route.flatMap { $0.isEmpty ? nil : $0 },
                target: request.route == nil ? request.target : nil, attempt: request.attempt,
                connection: connections[request.connection] ?? request.connection, range: request.rangeHeader,
                asked: request.requested.isEmpty
                    || request.requested
                        == request.rangeHeader.map({ RunTrace.ByteSpan.requested(by: $0, length: trace.resourceLength) }
                        )
                    ? nil : request.requested.map { [$0.start, $0.end] },
                ifRange: request.ifRange, sent: request.sent.map { [$0.start, $0.end] },
                bytes: request.bodyBytesSent == 0 || request.sent?.count == request.bodyBytesSent
                    ? nil : request.bodyBytesSent,
                planned: request.bodyBytesPlanned == request.bodyBytesSent ? nil : request.bodyBytesPlanned,
                twice: request.sentTwice.isEmpty ? nil : request.sentTwice.map { [$0.start, $0.end] },
                outcome: request.outcome == .complete ? nil : request.outcome.rawValue,
                faults: request.faults.isEmpty ? nil : request.faults,
                time: [request.startMilliseconds, request.endMilliseconds], validator: request.validator,
                version: request.version, encoding: request.contentEncoding, location: request.location,
                launch: request.launch == 1 ? nil : request.launch, rerun: request.byHarnessRerun)
        }
        outputs = trace.outputs.map { output in
            Output(
                name: output.name == "\(trace.scenario).bin" ? nil : output.name, missing: output.exists ? nil : true,
                size: output.size,
                map: output.segments.map { [$0.range.lowerBound, $0.range.upperBound, $0.version.map(UInt64.init)] })
        }
    }

    /// The trace again, for the Swift reports and the bug report.
    ///
    /// - Parameters:
    ///   - scenario: the scenario's name.
    ///   - description: what it exercises.
    /// - Returns: the trace; each request's arrival number is its order.
    public func runTrace(scenario: String, description: String) -> RunTrace {
        func byteSpan(_ pair: [UInt64]?) -> RunTrace.ByteSpan? {
            guard let pair, pair.count == 2 else { return nil }
            return RunTrace.ByteSpan(start: pair[0], end: pair[1])
        }
        let requests = self.requests.enumerated().map { index, request in
            // After the requests left out, the numbers go on where they would have been.
            let order = index + 1 + (omitted.map { index >= $0.after ? $0.count : 0 } ?? 0)
            let bytes =
                request.bytes ?? request.sent.flatMap { $0.count == 2 && $0[1] >= $0[0] ? $0[1] - $0[0] : nil } ?? 0
            return RunTrace.Request(
                order: order, arrival: order, connection: request.connection, method: request.method ?? "GET",
                target: request.target ?? "", route: request.route ?? (request.target == nil ? "" : nil),
                attempt: request.attempt, status: request.status, rangeHeader: request.range,
                requested: request.asked.map { $0.compactMap(byteSpan) }
                    ?? request.range.map { RunTrace.ByteSpan.requested(by: $0, length: length) } ?? [],
                ifRange: request.ifRange,
                sent: byteSpan(request.sent),
                bodyBytesPlanned: request.planned ?? bytes, bodyBytesSent: bytes,
                sentTwice: (request.twice ?? []).compactMap(byteSpan),
                outcome: request.outcome.flatMap(JournalOutcome.init(rawValue:)) ?? .complete,
                faults: request.faults ?? [], startMilliseconds: request.time.first ?? 0,
                endMilliseconds: request.time.last ?? 0, validator: request.validator, version: request.version,
                contentEncoding: request.encoding, location: request.location,
                launch: launches == true ? request.launch ?? 1 : nil, byHarnessRerun: request.rerun)
        }
        return RunTrace(
            scenario: scenario, description: description, resourceLength: length, versions: versions,
            expectedVersion: expected, requests: requests,
            outputs: outputs.map { output in
                RunTrace.Output(
                    name: output.name ?? "\(scenario).bin", exists: output.missing != true, size: output.size,
                    segments: output.map.compactMap { part in
                        guard part.count == 3, let start = part[0], let end = part[1], end >= start else { return nil }
                        return ContentSegment(range: start..<end, version: part[2].map { Int($0) })
                    })
            }, spanMilliseconds: span)
    }
}
