#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a response ended, as recorded in the journal.
public enum JournalOutcome: String, Codable, Hashable, Sendable {
    /// Every planned body byte was sent.
    case complete
    /// The server closed the connection early on purpose (`drop-after`).
    case dropped
    /// The server aborted the connection with a TCP RST on purpose (`reset-after`).
    case reset
    /// The server ended the TCP stream without TLS's close_notify on purpose (`tls-truncate-after`; on plain HTTP,
    /// a close like `dropped`).
    case truncated
    /// The client closed the connection before the body was complete.
    case clientClosed = "client-closed"
    /// The response was still stalled when the connection ended (`stall-after`, or server shutdown).
    case stalled
    /// HTTP/2: the server reset the stream on purpose (`rst-stream-after`), the connection left open.
    case streamReset = "stream-reset"
    /// HTTP/2: the server refused the stream before any answer on purpose (`goaway-refuse`): it was not processed.
    case refused
}

/// Declared, as a public type does not get it implicitly: the journal's slots, which must be `BitwiseCopyable`,
/// hold an outcome.
extension JournalOutcome: BitwiseCopyable {}

/// One request and its response, as the control API and the JSON Lines file show it.
///
/// The JSON keys are exactly the property names. `scenario`, `run`, `route` and `attempt` are `null`
/// for requests outside a scenario. In `requestHeaders` and `responseHeaders` names are lower case and repeated
/// headers are joined with `", "` (see `headerDictionary(_:)`); `requestHeaderList` and `responseHeaderList` keep
/// every field apart, in order, with its name as sent or planned, so two `Content-Range` fields read as the client
/// saw them.
public struct JournalEntry: Codable, Hashable, Sendable {
    /// The sequence number, assigned by `Journal.append`: 1 for the first entry, never reused.
    public var seq: Int
    /// When the response ended, RFC 3339 UTC with milliseconds, e.g. `2026-11-21T20:05:31.123Z`.
    public var time: String
    /// The request method.
    public var method: String
    /// The request target as received (path and query, not decoded).
    public var target: String
    /// The scenario name, or `nil` outside a scenario.
    public var scenario: String?
    /// The scenario run, or `nil` outside a scenario.
    public var run: String?
    /// The scenario route (`""` for the scenario's own URL), or `nil` outside a scenario.
    public var route: String?
    /// The attempt number at the route, or `nil` outside a scenario or when no attempt was counted.
    public var attempt: Int?
    /// The request headers, lower-case names.
    public var requestHeaders: [String: String]
    /// The response status.
    public var status: Int
    /// The response headers, lower-case names.
    public var responseHeaders: [String: String]
    /// The request headers in the order received, one element per field line (repeated names kept apart), names as
    /// the client sent them.
    public var requestHeaderList: [Field]
    /// The planned response headers in the order sent, one element per field line (repeated names kept apart),
    /// names as planned.
    public var responseHeaderList: [Field]
    /// How many body bytes the response planned to send.
    public var bodyBytesPlanned: UInt64
    /// How many body bytes were actually handed to the connection.
    public var bodyBytesSent: UInt64
    /// How the response ended.
    public var outcome: JournalOutcome
    /// The applied faults in canonical `key=value` form (see `FaultPlan.appliedNames`).
    public var faults: [String]
    /// The connection's identifier; requests on one keep-alive connection share it.
    public var connection: Int
    /// The client's address, e.g. `127.0.0.1:50123` or `[::1]:50123`.
    public var peer: String
    /// The order in which the server received the request: 1 for the first request whose headers arrived,
    /// never reused while the server runs.
    ///
    /// `seq` follows the end of responses, so a long, stalled or dropped response can be journalled after
    /// requests the client sent later; and a client's connection pool may send a later request on an
    /// older connection, so `connection` does not order requests either. Sort by `arrival` to see
    /// requests in the order the client made them.
    public var arrival: Int
    /// When the server received the request's headers, RFC 3339 UTC with milliseconds like `time`: with `time` (the
    /// response's end) it shows how long a stalled or slow response kept its request open.
    public var arrivalTime: String
    /// With the `probability` fault, whether this request's draw applied the other faults (`true`) or not
    /// (`false`, and `faults` then lists only `probability` and `fault-seed`); `null` without `probability`.
    public var faultsApplied: Bool?
    /// Whether the request came in on a TLS port (`https://`). Older journals without the key read as `false`.
    public var tls: Bool
    /// Whether the client closed the connection of its own accord: the response was not complete (`client-closed`)
    /// and no fault of it had fired (no stall, drop, reset, truncation, bad chunk or garbage reached, no delay given
    /// up on). A client that reads the start of a response and closes it (a probe), or that stops a download to
    /// start it again, leaves such an entry; one whose process was killed does too, and only whoever killed it knows
    /// that. Older journals without the key read as `false`.
    public var abandoned: Bool
    /// The protocol the exchange came over: `h1` (HTTP/1.1 or 1.0) or `h2`; JSON key `protocol`. Older journals
    /// without the key read as `h1`.
    public var httpProtocol: String
    /// The HTTP/2 stream id; `null` over HTTP/1.1.
    public var stream: Int?
    /// The protocol the connection's TLS handshake chose by ALPN (`h2`, `http/1.1`); `null` without TLS, and on the
    /// libmicrohttpd TLS port, which negotiates none.
    public var alpn: String?
    /// The protocols the client's ClientHello offered by ALPN, in its order; `null` when none were seen.
    public var alpnOffered: [String]?

    /// Makes an entry; `seq` is normally 0 here and assigned by `Journal.append`.
    ///
    /// - Parameters:
    ///   - seq: the sequence number (overwritten by `Journal.append`).
    ///   - time: the RFC 3339 timestamp, see `timestamp()`.
    ///   - method: the request method.
    ///   - target: the request target as received.
    ///   - scenario: the scenario name, if any.
    ///   - run: the scenario run, if any.
    ///   - route: the scenario route, if any.
    ///   - attempt: the attempt number, if any.
    ///   - requestHeaders: the request headers, lower-case names.
    ///   - status: the response status.
    ///   - responseHeaders: the response headers, lower-case names.
    ///   - bodyBytesPlanned: the planned body length.
    ///   - bodyBytesSent: the body bytes actually sent.
    ///   - outcome: how the response ended.
    ///   - faults: the applied faults.
    ///   - connection: the connection identifier.
    ///   - peer: the client's address.
    ///   - arrival: the arrival order number.
    ///   - arrivalTime: when the request arrived; `time` when not given.
    ///   - faultsApplied: with `probability`, whether the faults applied.
    ///   - tls: whether the request came in on a TLS port.
    ///   - abandoned: whether the client left the response of its own accord.
    ///   - requestHeaderList: the request headers in order, one per field line.
    ///   - responseHeaderList: the response headers in order, one per field line.
    ///   - httpProtocol: `h1` or `h2`.
    ///   - stream: the HTTP/2 stream id, if any.
    ///   - alpn: the protocol ALPN chose, if any.
    ///   - alpnOffered: the protocols the client offered by ALPN, if seen.
    public init(
        seq: Int = 0, time: String, method: String, target: String, scenario: String? = nil, run: String? = nil,
        route: String? = nil, attempt: Int? = nil, requestHeaders: [String: String] = [:], status: Int,
        responseHeaders: [String: String] = [:], bodyBytesPlanned: UInt64, bodyBytesSent: UInt64,
        outcome: JournalOutcome, faults: [String] = [], connection: Int, peer: String, arrival: Int = 0,
        arrivalTime: String? = nil, faultsApplied: Bool? = nil, tls: Bool = false, abandoned: Bool = false,
        requestHeaderList: [Field] = [], responseHeaderList: [Field] = [], httpProtocol: String = "h1",
        stream: Int? = nil, alpn: String? = nil, alpnOffered: [String]? = nil
    ) {
        self.httpProtocol = httpProtocol
        self.stream = stream
        self.alpn = alpn
        self.alpnOffered = alpnOffered
        self.abandoned = abandoned
        self.requestHeaderList = requestHeaderList
        self.responseHeaderList = responseHeaderList
        self.seq = seq
        self.time = time
        self.method = method
        self.target = target
        self.scenario = scenario
        self.run = run
        self.route = route
        self.attempt = attempt
        self.requestHeaders = requestHeaders
        self.status = status
        self.responseHeaders = responseHeaders
        self.bodyBytesPlanned = bodyBytesPlanned
        self.bodyBytesSent = bodyBytesSent
        self.outcome = outcome
        self.faults = faults
        self.connection = connection
        self.peer = peer
        self.arrival = arrival
        self.arrivalTime = arrivalTime ?? time
        self.faultsApplied = faultsApplied
        self.tls = tls
    }

    private enum CodingKeys: String, CodingKey {
        case seq, time, method, target, scenario, run, route, attempt, requestHeaders, status, responseHeaders
        case bodyBytesPlanned, bodyBytesSent, outcome, faults, connection, peer, arrival, arrivalTime, faultsApplied
        case tls, abandoned, requestHeaderList, responseHeaderList
        case httpProtocol = "protocol"
        case stream, alpn, alpnOffered
    }

    /// Decodes an entry; `tls` and `abandoned` may be missing (journals written before them) and are then `false`,
    /// and the header lists then empty.
    ///
    /// - Parameters:
    ///   - decoder: the decoder to read from.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seq = try container.decode(Int.self, forKey: .seq)
        time = try container.decode(String.self, forKey: .time)
        method = try container.decode(String.self, forKey: .method)
        target = try container.decode(String.self, forKey: .target)
        scenario = try container.decodeIfPresent(String.self, forKey: .scenario)
        run = try container.decodeIfPresent(String.self, forKey: .run)
        route = try container.decodeIfPresent(String.self, forKey: .route)
        attempt = try container.decodeIfPresent(Int.self, forKey: .attempt)
        requestHeaders = try container.decode([String: String].self, forKey: .requestHeaders)
        status = try container.decode(Int.self, forKey: .status)
        responseHeaders = try container.decode([String: String].self, forKey: .responseHeaders)
        bodyBytesPlanned = try container.decode(UInt64.self, forKey: .bodyBytesPlanned)
        bodyBytesSent = try container.decode(UInt64.self, forKey: .bodyBytesSent)
        outcome = try container.decode(JournalOutcome.self, forKey: .outcome)
        faults = try container.decode([String].self, forKey: .faults)
        connection = try container.decode(Int.self, forKey: .connection)
        peer = try container.decode(String.self, forKey: .peer)
        arrival = try container.decode(Int.self, forKey: .arrival)
        arrivalTime = try container.decode(String.self, forKey: .arrivalTime)
        faultsApplied = try container.decodeIfPresent(Bool.self, forKey: .faultsApplied)
        tls = try container.decodeIfPresent(Bool.self, forKey: .tls) ?? false
        abandoned = try container.decodeIfPresent(Bool.self, forKey: .abandoned) ?? false
        requestHeaderList = try container.decodeIfPresent([Field].self, forKey: .requestHeaderList) ?? []
        responseHeaderList = try container.decodeIfPresent([Field].self, forKey: .responseHeaderList) ?? []
        httpProtocol = try container.decodeIfPresent(String.self, forKey: .httpProtocol) ?? "h1"
        stream = try container.decodeIfPresent(Int.self, forKey: .stream)
        alpn = try container.decodeIfPresent(String.self, forKey: .alpn)
        alpnOffered = try container.decodeIfPresent([String].self, forKey: .alpnOffered)
    }

    /// Encodes every key, writing `null` for absent scenario fields rather than leaving them out
    /// (the synthesized encoder would omit them, and readers expect a fixed set of keys).
    ///
    /// - Parameters:
    ///   - encoder: the encoder to write to.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(time, forKey: .time)
        try container.encode(method, forKey: .method)
        try container.encode(target, forKey: .target)
        try container.encode(scenario, forKey: .scenario)
        try container.encode(run, forKey: .run)
        try container.encode(route, forKey: .route)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(requestHeaders, forKey: .requestHeaders)
        try container.encode(status, forKey: .status)
        try container.encode(responseHeaders, forKey: .responseHeaders)
        try container.encode(bodyBytesPlanned, forKey: .bodyBytesPlanned)
        try container.encode(bodyBytesSent, forKey: .bodyBytesSent)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(faults, forKey: .faults)
        try container.encode(connection, forKey: .connection)
        try container.encode(peer, forKey: .peer)
        try container.encode(arrival, forKey: .arrival)
        try container.encode(arrivalTime, forKey: .arrivalTime)
        try container.encode(faultsApplied, forKey: .faultsApplied)
        try container.encode(tls, forKey: .tls)
        try container.encode(abandoned, forKey: .abandoned)
        try container.encode(requestHeaderList, forKey: .requestHeaderList)
        try container.encode(responseHeaderList, forKey: .responseHeaderList)
        try container.encode(httpProtocol, forKey: .httpProtocol)
        try container.encode(stream, forKey: .stream)
        try container.encode(alpn, forKey: .alpn)
        try container.encode(alpnOffered, forKey: .alpnOffered)
    }

    /// One header field line as the journal keeps it in `requestHeaderList` and `responseHeaderList`: JSON
    /// `{"name": ..., "value": ...}`.
    public struct Field: Codable, Hashable, Sendable {
        /// The field name, as sent (`requestHeaderList`) or planned (`responseHeaderList`).
        public var name: String
        /// The field value, as received or planned.
        public var value: String

        /// Makes one.
        ///
        /// - Parameters:
        ///   - name: the field name.
        ///   - value: the field value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Builds a header dictionary the journal's way: lower-case names, repeated headers joined with `", "`
    /// in the order received.
    ///
    /// - Parameters:
    ///   - headers: the headers as received or sent.
    /// - Returns: the dictionary.
    public static func headerDictionary(_ headers: [(name: String, value: String)]) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in headers {
            let key = name.lowercased()
            if let existing = result[key] {
                result[key] = existing + ", " + value
            } else {
                result[key] = value
            }
        }
        return result
    }

    /// The current wall-clock time as an RFC 3339 UTC timestamp with milliseconds.
    ///
    /// - Returns: for example `2026-11-21T20:05:31.123Z`.
    public static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timestamp(secondsSince1970: Int64(now.tv_sec), milliseconds: Int(now.tv_nsec / 1_000_000))
    }

    /// Formats a point in time as an RFC 3339 UTC timestamp with milliseconds.
    ///
    /// Pure arithmetic (no `DateFormatter`, no time zone database), so it is cheap and safe on any thread.
    ///
    /// - Parameters:
    ///   - seconds: whole seconds since 1970-01-01T00:00:00Z (may be negative).
    ///   - milliseconds: 0...999, added to `seconds`.
    /// - Returns: for example `2026-11-21T20:05:31.123Z`.
    public static func timestamp(secondsSince1970 seconds: Int64, milliseconds: Int) -> String {
        // Floor division so that times before 1970 land on the right day.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        // Days to civil date, after Howard Hinnant's `civil_from_days` (proleptic Gregorian calendar).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        let clampedMilliseconds = Int64(min(max(milliseconds, 0), 999))
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(Int64(secondOfDay / 3600), 2)):"
            + "\(pad(Int64(secondOfDay / 60 % 60), 2)):\(pad(Int64(secondOfDay % 60), 2)).\(pad(clampedMilliseconds, 3))Z"
    }
}

extension JournalEntry {
    /// The entry as one compact JSON object, keys in declaration order, header names sorted.
    ///
    /// Hand-written rather than `JSONEncoder` because it runs for every request and for every entry of
    /// a 100,000-entry journal dump, and because the output must be byte-for-byte deterministic.
    func write(to writer: inout JSONWriter) {
        writer.separate()
        writer.open("{")
        writer.key("seq")
        writer.number(seq)
        writer.key("time")
        writer.string(time)
        writer.key("method")
        writer.string(method)
        writer.key("target")
        writer.string(target)
        writer.key("scenario")
        writer.optionalString(scenario)
        writer.key("run")
        writer.optionalString(run)
        writer.key("route")
        writer.optionalString(route)
        writer.key("attempt")
        if let attempt { writer.number(attempt) } else { writer.raw("null") }
        writer.key("requestHeaders")
        writer.dictionary(requestHeaders)
        writer.key("status")
        writer.number(status)
        writer.key("responseHeaders")
        writer.dictionary(responseHeaders)
        writer.key("bodyBytesPlanned")
        writer.number(bodyBytesPlanned)
        writer.key("bodyBytesSent")
        writer.number(bodyBytesSent)
        writer.key("outcome")
        writer.string(outcome.rawValue)
        writer.key("faults")
        writer.open("[")
        for fault in faults {
            writer.separate()
            writer.string(fault)
        }
        writer.close("]")
        writer.key("connection")
        writer.number(connection)
        writer.key("peer")
        writer.string(peer)
        writer.key("arrival")
        writer.number(arrival)
        writer.key("arrivalTime")
        writer.string(arrivalTime)
        writer.key("faultsApplied")
        if let faultsApplied { writer.raw(faultsApplied ? "true" : "false") } else { writer.raw("null") }
        writer.key("tls")
        writer.raw(tls ? "true" : "false")
        writer.key("abandoned")
        writer.raw(abandoned ? "true" : "false")
        writer.key("requestHeaderList")
        writer.fields(requestHeaderList)
        writer.key("responseHeaderList")
        writer.fields(responseHeaderList)
        writer.key("protocol")
        writer.string(httpProtocol)
        writer.key("stream")
        if let stream { writer.number(stream) } else { writer.raw("null") }
        writer.key("alpn")
        writer.optionalString(alpn)
        writer.key("alpnOffered")
        if let alpnOffered {
            writer.open("[")
            for name in alpnOffered {
                writer.separate()
                writer.string(name)
            }
            writer.close("]")
        } else {
            writer.raw("null")
        }
        writer.close("}")
    }

    /// The entry as one compact JSON object (UTF-8), as written to the JSON Lines file without the newline.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.output
    }
}
