/// The faults to inject into one response, parsed from query parameters or a scenario step.
///
/// A plan is a plain value: the daemon layer reads it while building and sending the response,
/// and the journal records `appliedNames`. An empty plan (`FaultPlan()`) means a well-behaved server.
public struct FaultPlan: Hashable, Sendable {
    /// How long `stall-after` stalls when no `stall-for` is given: long enough that only the
    /// client's own idle timeout can end it.
    package static let defaultStallDuration: Duration = .seconds(3600)

    /// Send the headers (with the full Content-Length) and this many body bytes, then close cleanly.
    package var dropAfter: UInt64?
    /// Send the headers and this many body bytes, then abort the connection with a TCP RST.
    package var resetAfter: UInt64?
    /// Send the headers and this many body bytes, then close the TCP connection without TLS's close_notify: a
    /// truncation that a TLS client must treat as an error, never as the end of the body. On plain HTTP, where
    /// there is no close_notify to leave out, it is the same as `drop-after`.
    package var tlsTruncateAfter: UInt64?
    /// After this many body bytes, send nothing for `stallFor`, then continue.
    package var stallAfter: UInt64?
    /// How long `stallAfter` stalls: the `stall-for` value, or `defaultStallDuration` when none was given.
    ///
    /// Setting it counts as giving `stall-for` (see `explicitStallFor`).
    package var stallFor: Duration {
        get { explicitStallFor ?? Self.defaultStallDuration }
        set { explicitStallFor = newValue }
    }
    /// The `stall-for` value if one was given, `nil` otherwise.
    ///
    /// Stored apart from `stallFor` so `merged(over:)`, the `stall-for requires stall-after` check and
    /// `appliedNames` can tell "not given" from "given as one hour".
    package internal(set) var explicitStallFor: Duration?
    /// Throttle the body to this many bytes per second (always greater than zero).
    package var rate: UInt64?
    /// Wait this long before sending the status line.
    package var delay: Duration?
    /// Answer with this status (200...599) and a short text body instead of the resource.
    package var status: Int?
    /// With `status` (or `connection-cap`), add this `Retry-After`: seconds, or a date some seconds ahead.
    package var retryAfter: RetryAfter?
    /// Ignore the `Range` header and answer 200 with the full body.
    package var ignoreRange = false
    /// Ignore `If-Range` and serve the range even when the validator does not match.
    package var ignoreIfRange = false
    /// Omit the `ETag` header.
    package var noETag = false
    /// Send the ETag as weak (`W/"..."`), which `If-Range` must not match.
    package var weakETag = false
    /// Omit the `Last-Modified` header.
    package var noLastModified = false
    /// Omit `Accept-Ranges: bytes`.
    package var noAcceptRanges = false
    /// Send the body with chunked transfer encoding and no Content-Length.
    package var chunked = false
    /// Start a 206 body this many bytes before the requested start, with a truthful Content-Range.
    package var misalignRange: UInt64?
    /// Change the ETag (only the ETag: not the bytes, not Last-Modified) by appending this token to it, as
    /// another edge of a CDN would; 1 to 32 letters, digits, `.`, `_` or `-`.
    package var etagSalt: String?
    /// Treat an `If-Range` that carries an entity tag as a mismatch (200), and evaluate a date normally: a CDN
    /// that honours If-Range for dates only (`if-range=date-only`).
    package var ifRangeDateOnly = false
    /// How an unsatisfiable range is answered instead of a 416 with `Content-Range: bytes */LENGTH`.
    package var unsatisfiableShape: UnsatisfiableShape?
    /// Add `Content-Range: bytes 0-LAST/LENGTH` to a 200 that carries the whole representation.
    package var contentRangeOn200 = false
    /// Send a single-range 206's Content-Range with an unknown complete length, `bytes FIRST-LAST/*`.
    package var contentRangeTotalUnknown = false
    /// Cut a single-range 206 to at most this many bytes from the requested start (above zero), with a Content-Range
    /// that describes the bytes sent.
    package var rangeCap: UInt64?
    /// Apply the other faults to a request only with this probability, in millionths (1...1_000_000); see
    /// `FaultChance`.
    package var probability: UInt32?
    /// The seed of the draws `probability` makes; 0 when not given.
    package var faultSeed: UInt64?
    /// Serve the representation gzip-encoded (`encoding=gzip`, `gzip-ignores-range`, `gzip-always`).
    package var encoding: ContentEncodingFault?
    /// Declare a `Content-Length` this many bytes off the body actually sent (negative: shorter), and close the
    /// connection after the body.
    package var lengthDelta: Int64?
    /// Send this many correct body bytes, then pseudo-random bytes to the declared length, then close.
    package var garbageAfter: UInt64?
    /// Send the body chunked and with a `Content-Length` (of the body, not of the chunked bytes on the wire).
    package var chunkedWithLength = false
    /// Send this many body bytes in well-formed chunks, then a chunk-size line that is not hexadecimal, then close.
    package var badChunkAfter: UInt64?
    /// Serve at most this many responses at once to one peer address for one target (path and query); answer the
    /// others 503 with `Retry-After` (``retryAfter``, default 1).
    package var connectionCap: Int?
    /// Send this value verbatim as a single-part 206's Content-Range (`content-range=RAW`), malformed or not, over the
    /// body of the range asked for.
    package var contentRangeRaw: String?
    /// Answer a request for one range with a `multipart/byteranges` 206 holding one part (`multipart=always`).
    package var multipartAlways = false
    /// Answer a GET or HEAD without Range with 206, `Content-Range: bytes 0-LAST/LENGTH` and the whole representation
    /// (`unsolicited-206=1`).
    package var unsolicited206 = false
    /// Answer 200 with a short HTML page (`Content-Type: text/html`) instead of the representation (`html-page=1`).
    package var htmlPage = false
    /// Give every answer this `Content-Type` instead of its own (`content-type=VALUE`).
    package var contentType: String?
    /// Give every answer this `Content-Disposition` (`content-disposition=VALUE`).
    package var contentDisposition: String?
    /// Answer 400 with one line when the request carries this header field, named in lower case
    /// (`reject-header=NAME`).
    package var rejectHeader: String?

    // Issue 28's HEAD, Retry-After and Last-Modified keys, kept together.
    /// How HEAD is answered (`head=405`, `403`, `stall`); GET is served as usual.
    package var head: HeadFault?
    /// HEAD's Content-Length this many bytes off GET's (negative: shorter); GET is served as usual.
    package var headLengthDelta: Int64?
    /// Version N of a generated resource keeps version N-1's Last-Modified: new bytes and ETag under the same date.
    package var lastModifiedCollides = false
    /// Fields every answer carries after its own, in order, as written (`header=NAME:VALUE`, repeatable).
    package var extraHeaders: [ExtraHeader] = []
    /// HTTP/2: RST_STREAM after this many body bytes (0: before the HEADERS).
    package var rstStreamAfter: UInt64?
    /// HTTP/2: the error code of `rstStreamAfter`'s RST_STREAM; INTERNAL_ERROR when not given.
    package var rstCode: StreamErrorCode?
    /// HTTP/2: GOAWAY naming this stream after this many body bytes.
    package var goAwayAfter: UInt64?
    /// HTTP/2: how `goAwayAfter` ends the connection; `close` when not given.
    package var goAway: GoAwayMode?
    /// HTTP/2: GOAWAY below this stream before its HEADERS, then a close.
    package var goAwayRefuse = false

    /// Whether the answer ends before any HEADERS: a stream reset at 0 bytes, or a refusing GOAWAY (HTTP/2 only).
    package var refusesBeforeHeaders: Bool { rstStreamAfter == 0 || goAwayRefuse }
    /// HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS announced before this answer.
    package var maxConcurrentStreams: Int?
    /// HTTP/2: HEADERS without content-length.
    package var noContentLength = false

    /// How `encoding` serves the representation.
    ///
    /// The encoded bytes are a representation of their own: their own strong ETag, and ranges over the encoded
    /// bytes, as RFC 9110 has it and CDNs that compress do.
    package enum ContentEncodingFault: String, CaseIterable, Hashable, Sendable {
        /// gzip when the request's `Accept-Encoding` allows it, identity otherwise.
        case gzip
        /// Like `gzip`, but a ranged request that accepts gzip gets 200 with the whole encoded body (a CDN that
        /// ignores Range whenever it compresses).
        case gzipIgnoresRange = "gzip-ignores-range"
        /// gzip even when the request asked for identity or sent no `Accept-Encoding` (a broken server).
        case gzipAlways = "gzip-always"
    }

    /// The shapes of a 416 for `416-shape`.
    package enum UnsatisfiableShape: String, CaseIterable, Hashable, Sendable {
        /// 416 without `Content-Range`, as some servers send.
        case noContentRange = "no-content-range"
        /// 416 with an HTML error page as its body (`Content-Type: text/html`), the kind a CDN sends.
        case htmlBody = "html-body"
    }

    /// A plan with no faults.
    public init() {}

    /// Whether the plan injects nothing at all: the same as `self == FaultPlan()`.
    ///
    /// Field by field, as every request asks: the synthesized `==` against a new plan cost about a hundred
    /// instructions. A new fault must be added here too (the tests set each `FaultKey` alone and check this).
    public var isEmpty: Bool {
        dropAfter == nil && resetAfter == nil && tlsTruncateAfter == nil && stallAfter == nil && explicitStallFor == nil
            && rate == nil
            && delay == nil && status == nil && retryAfter == nil && !ignoreRange && !ignoreIfRange && !noETag
            && !weakETag && !noLastModified && !noAcceptRanges && !chunked && misalignRange == nil
            && etagSalt == nil && !ifRangeDateOnly && unsatisfiableShape == nil && !contentRangeOn200
            && !contentRangeTotalUnknown && rangeCap == nil
            && probability == nil && faultSeed == nil && encoding == nil && lengthDelta == nil && garbageAfter == nil
            && !chunkedWithLength && badChunkAfter == nil && connectionCap == nil
            && head == nil && headLengthDelta == nil && !lastModifiedCollides
            && contentRangeRaw == nil && !multipartAlways && !unsolicited206 && !htmlPage && contentType == nil
            && contentDisposition == nil && rejectHeader == nil && extraHeaders.isEmpty
            && rstStreamAfter == nil && rstCode == nil && goAwayAfter == nil && goAway == nil && !goAwayRefuse
            && maxConcurrentStreams == nil && !noContentLength
    }

    /// The keys whose fault shapes the response from its first byte (its status line and headers: a 200 to a Range,
    /// a misaligned or unasked Content-Range, a changed validator behind an If-Range, an encoding, conflicting
    /// framing): a client that closes such a response did not leave a healthy one of its own accord. The other keys
    /// fire at a point of the body (`drop-after`, `stall-after`, `length-delta` once past the declared length, ...)
    /// or change nothing a client could object to (`no-etag`, `rate`, ...). Declared by `FaultKey.shapesResponse`.
    package static let shapingKeys: Set<String> = Set(FaultKey.all.filter(\.shapesResponse).map(\.name))

    /// Whether one of `appliedNames` (`key=value`) is a shaping fault (see `shapingKeys`).
    ///
    /// - Parameters:
    ///   - names: applied fault names.
    /// - Returns: true when any names a shaping key.
    package static func shapesResponse(_ names: [String]) -> Bool {
        names.contains { name in
            shapingKeys.contains(String(name.prefix { $0 != "=" }))
        }
    }

    /// Query keys that are resource parameters, not faults: `parse(query:)` hands them back untouched.
    package static let passthroughKeys: Set<String> = ["seed", "version", "redirect-code", "redirect-location", "hop"]

    /// The applied faults as `key=value` strings in canonical order, for the journal's `faults` field.
    ///
    /// Values are canonical: sizes in their shortest exact form (`2400K`), durations as `2s`, `250ms`
    /// or fractional seconds, booleans as `1` (false booleans and unset faults are left out). Joining
    /// the list with `&` gives a query that parses back to an equal plan, e.g. `["drop-after=2400K"]`.
    public var appliedNames: [String] {
        var names: [String] = []
        for key in FaultKey.all {
            if let each = key.readEach {
                names += each(self).map { "\(key.name)=\($0)" }
            } else if let value = key.read(self) {
                names.append("\(key.name)=\(value)")
            }
        }
        return names
    }

    /// Parses the fault parameters out of a request's query.
    ///
    /// - Parameters:
    ///   - query: the decoded query pairs, as `QueryString.parse` returns them.
    /// - Returns: the plan, and the resource parameters (`passthroughKeys`) in their original order.
    /// - Throws: `RangeServerError.invalidFault` for an unknown key, a repeated fault key, a bad value,
    ///   or an inconsistent combination (`stall-for` without `stall-after`, `retry-after` without
    ///   `status` or `connection-cap`, `drop-after` with `reset-after` or `tls-truncate-after`, `no-etag` with `weak-etag` or `etag-salt`, `if-range` with
    ///   `ignore-if-range`, `fault-seed` without `probability`, `probability` alone, and those of `content-range`,
    ///   `multipart` and `html-page` that `checkCombination` lists). The one-line message
    ///   names the key and the value, and is meant to be the body of a 400.
    public static func parse(
        query: [(key: String, value: String)]
    ) throws -> (plan: FaultPlan, passthrough: [(key: String, value: String)]) {
        var plan = FaultPlan()
        var passthrough: [(key: String, value: String)] = []
        var seen: Set<String> = []
        for (rawKey, value) in query {
            if passthroughKeys.contains(rawKey) {
                passthrough.append((key: rawKey, value: value))
                continue
            }
            guard let key = FaultKey.named[rawKey] else {
                throw RangeServerError.invalidFault("unknown query parameter \(quoted(rawKey, value))")
            }
            guard seen.insert(rawKey).inserted || key.readEach != nil else {
                throw RangeServerError.invalidFault("repeated query parameter \(quoted(rawKey, value))")
            }
            do {
                try plan.set(key, from: value)
            } catch {
                throw RangeServerError.invalidFault("bad query parameter \(error.message)")
            }
        }
        do {
            try plan.checkCombination()
        } catch {
            throw RangeServerError.invalidFault("bad query parameters: \(error.message)")
        }
        return (plan, passthrough)
    }

    /// Layers this plan (typically from the query) over `base` (typically a scenario step).
    ///
    /// Each fault set here wins over the same fault in `base`. Coupled faults move as a unit so the
    /// result stays consistent: `stall-after` with its `stall-for`, `status` with its `retry-after`,
    /// `drop-after`/`reset-after`/`tls-truncate-after` (the connection ends one way only), `no-etag`/`weak-etag` and
    /// `probability`/`fault-seed`.
    /// A boolean can only be switched on this way: `ignore-range=0` cannot cancel a step's `ignore-range`.
    ///
    /// - Parameters:
    ///   - base: the plan to start from.
    /// - Returns: the combined plan.
    public func merged(over base: FaultPlan) -> FaultPlan {
        var result = base
        for unit in FaultKey.mergeUnits where unit.triggers.contains(where: { $0.isSet(self) }) {
            for key in unit.members { key.copy(&result, self) }
        }
        return result
    }
}

/// A bad fault value or combination, before it is given a place (query or scenario file line).
struct FaultValueError: Error {
    /// The key to blame; the scenario loader reports the line of this key.
    let key: String
    /// `key=value: reason`, one line.
    let message: String
}

extension FaultPlan {
    /// Sets one fault from its textual value, the same way for query parameters and scenario steps.
    mutating func set(_ key: FaultKey, from value: String) throws(FaultValueError) {
        guard key.assign(&self, value) else {
            let shown = FaultPlan.quoted(key.name, value)
            throw FaultValueError(key: key.name, message: "\(shown): expected \(key.expected)")
        }
    }

    /// Whether `text` is an `etag-salt` value: 1 to 32 ASCII letters, digits, `.`, `_` or `-` (all valid inside
    /// an entity tag, and safe in a URL and a file name).
    static func isSaltToken(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2E
                    || byte == 0x5F || byte == 0x2D
            }
    }

    /// This plan without `probability` and `fault-seed`: the faults a successful draw applies.
    var withoutChance: FaultPlan {
        var plan = self
        plan.probability = nil
        plan.faultSeed = nil
        return plan
    }

    /// This plan's `probability` and `fault-seed` alone: what a request gets when the draw says its faults do not
    /// apply (the journal still shows the probability it was drawn with).
    package var chanceOnly: FaultPlan {
        var plan = FaultPlan()
        plan.probability = probability
        plan.faultSeed = faultSeed
        return plan
    }

    /// Rejects combinations that have no single sensible meaning, blaming the dependent key.
    func checkCombination() throws(FaultValueError) {
        if let explicitStallFor, stallAfter == nil {
            throw conflict(.stallFor, "requires stall-after", FaultDuration.format(explicitStallFor))
        }
        if let retryAfter, status == nil, connectionCap == nil {
            throw conflict(.retryAfter, "requires status or connection-cap", retryAfter.text)
        }
        if let resetAfter, dropAfter != nil {
            throw conflict(.resetAfter, "cannot be combined with drop-after", ByteSize.format(resetAfter))
        }
        if let tlsTruncateAfter, dropAfter != nil || resetAfter != nil {
            throw conflict(
                .tlsTruncateAfter, "cannot be combined with drop-after or reset-after (the connection ends one way)",
                ByteSize.format(tlsTruncateAfter))
        }
        if let rstCode, rstStreamAfter == nil {
            throw conflict(.rstCode, "requires rst-stream-after", rstCode.text)
        }
        if noContentLength, lengthDelta != nil {
            throw conflict(
                .noContentLength, "cannot be combined with length-delta (one declared length at a time)", "1")
        }
        if let goAway, goAwayAfter == nil {
            throw conflict(.goAway, "requires goaway-after", goAway.rawValue)
        }
        if let rstStreamAfter, dropAfter != nil || resetAfter != nil || tlsTruncateAfter != nil {
            throw conflict(
                .rstStreamAfter,
                "cannot be combined with drop-after, reset-after or tls-truncate-after (the stream ends one way)",
                ByteSize.format(rstStreamAfter))
        }
        if let goAwayAfter, dropAfter != nil || resetAfter != nil || tlsTruncateAfter != nil || rstStreamAfter != nil {
            throw conflict(
                .goAwayAfter,
                "cannot be combined with drop-after, reset-after, tls-truncate-after or rst-stream-after (the stream ends one way)",
                ByteSize.format(goAwayAfter))
        }
        if goAwayRefuse, rstStreamAfter != nil || goAwayAfter != nil {
            throw conflict(
                .goAwayRefuse,
                "cannot be combined with rst-stream-after or goaway-after (the stream is refused, never answered)",
                "1")
        }
        if weakETag, noETag {
            throw conflict(.weakETag, "cannot be combined with no-etag", "1")
        }
        if let etagSalt, noETag {
            throw conflict(.etagSalt, "cannot be combined with no-etag (there is no ETag to change)", etagSalt)
        }
        if ifRangeDateOnly, ignoreIfRange {
            throw conflict(.ifRange, "cannot be combined with ignore-if-range", "date-only")
        }
        if let lengthDelta, chunked {
            throw conflict(
                .lengthDelta, "cannot be combined with chunked (a chunked body declares no length)",
                canonicalValue(of: .lengthDelta) ?? String(lengthDelta))
        }
        if let lengthDelta, chunkedWithLength {
            throw conflict(
                .lengthDelta, "cannot be combined with chunked-with-length (one declared length at a time)",
                canonicalValue(of: .lengthDelta) ?? String(lengthDelta))
        }
        if let badChunkAfter, lengthDelta != nil {
            throw conflict(
                .badChunkAfter, "cannot be combined with length-delta (a body with a declared length has no chunks)",
                ByteSize.format(badChunkAfter))
        }
        if chunkedWithLength, let encoding {
            throw conflict(
                .chunkedWithLength, "cannot be combined with encoding=\(encoding.rawValue)", "1")
        }
        try checkAnswerShapes()
        if let faultSeed, probability == nil {
            throw conflict(.faultSeed, "requires probability", String(faultSeed))
        }
        if let probability, withoutChance.isEmpty {
            throw conflict(
                .probability, "requires another fault to apply", FaultChance.formatMillionths(probability))
        }
    }

    /// The combinations of the keys that shape a 206 or replace the answer (`content-range`, `multipart`,
    /// `html-page`) that have no single meaning.
    private func checkAnswerShapes() throws(FaultValueError) {
        if let contentRangeRaw {
            let value = HeaderText.queryForm(contentRangeRaw)
            if contentRangeTotalUnknown {
                throw conflict(.contentRange, "cannot be combined with content-range-total (one Content-Range)", value)
            }
            if rangeCap != nil || misalignRange != nil {
                let other = rangeCap != nil ? "range-cap" : "misalign-range"
                throw conflict(
                    .contentRange, "cannot be combined with \(other) (its body is the range asked for)", value)
            }
        }
        if multipartAlways {
            if contentRangeRaw != nil || contentRangeTotalUnknown || rangeCap != nil {
                let other =
                    contentRangeRaw != nil
                    ? "content-range" : contentRangeTotalUnknown ? "content-range-total" : "range-cap"
                throw conflict(
                    .multipart, "cannot be combined with \(other) (it shapes a single-part 206)", "always")
            }
        }
        if htmlPage, let replaced = FaultKey.htmlPageReplaces.first(where: { $0.isSet(self) }) {
            throw conflict(
                .htmlPage, "cannot be combined with \(replaced.name) (the page replaces the answer it shapes)", "1")
        }
    }

    private func conflict(_ key: FaultKey, _ reason: String, _ value: String) -> FaultValueError {
        FaultValueError(key: key.name, message: "\(key.name)=\(value) \(reason)")
    }

    /// The canonical text of one fault's value, or `nil` when the fault is not applied.
    func canonicalValue(of key: FaultKey) -> String? {
        key.read(self)
    }

    /// A size with an optional leading `-` or `+` (`-100`, `+1K`); `nil` beyond ±2^63.
    static func signedSize(_ text: String) -> Int64? {
        let negative = text.hasPrefix("-")
        let digits = negative || text.hasPrefix("+") ? String(text.dropFirst()) : text
        guard let magnitude = ByteSize.parse(digits), magnitude <= UInt64(Int64.max) else { return nil }
        return negative ? -Int64(magnitude) : Int64(magnitude)
    }

    /// `1`/`true`/`0`/`false` in any case; an empty value (`?chunked`) means true.
    static func flag(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "", "1", "true": true
        case "0", "false": false
        default: nil
        }
    }

    /// A non-negative decimal integer of ASCII digits only (`Int("+5")` would accept a sign).
    static func decimalInt(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int(text)
    }

    /// `key=value` for messages, kept to one short line whatever the client sent.
    static func quoted(_ key: String, _ value: String) -> String {
        func clean(_ text: String) -> String {
            let limited = text.count > 64 ? String(text.prefix(64)) + "…" : text
            // A percent-decoded CR or LF would split the 400 message and the access log line.
            return String(limited.map { $0.isNewline || ($0.asciiValue ?? 0x20) < 0x20 || $0 == "\u{7F}" ? "?" : $0 })
        }
        return "\(clean(key))=\(clean(value))"
    }
}
