import HTTPVocabulary

/// What the server knows about the selected representation when deciding a response.
package struct RepresentationMetadata: Hashable, Sendable {
    /// The full length in bytes.
    public var length: UInt64
    /// The current `ETag`, if the server sends one.
    public var entityTag: EntityTag?
    /// The current `Last-Modified`, if the server sends one.
    public var lastModified: HTTPDate?

    /// Creates metadata for a representation.
    ///
    /// - Parameters:
    ///   - length: The full length in bytes.
    ///   - entityTag: The current `ETag`, or `nil` when none is sent.
    ///   - lastModified: The current `Last-Modified`, or `nil` when none is sent.
    public init(length: UInt64, entityTag: EntityTag? = nil, lastModified: HTTPDate? = nil) {
        self.length = length
        self.entityTag = entityTag
        self.lastModified = lastModified
    }
}

/// The parts of a request that influence the status: the method and the raw range and precondition fields.
///
/// Fields stay raw strings so the decision owns all parsing and its leniency rules in one place.
package struct ConditionalRequest: Hashable, Sendable {
    /// The request method, compared case-sensitively as RFC 9110 §9.1 requires.
    public var method: String
    /// The raw `Range` field value.
    public var range: String?
    /// The raw `If-Range` field value.
    public var ifRange: String?
    /// The raw `If-Match` field value.
    public var ifMatch: String?
    /// The raw `If-None-Match` field value.
    public var ifNoneMatch: String?
    /// The raw `If-Modified-Since` field value.
    public var ifModifiedSince: String?
    /// The raw `If-Unmodified-Since` field value.
    public var ifUnmodifiedSince: String?

    /// Creates a request description; every field defaults to absent.
    ///
    /// - Parameters:
    ///   - method: The request method, `GET` by default.
    ///   - range: The raw `Range` field value.
    ///   - ifRange: The raw `If-Range` field value.
    ///   - ifMatch: The raw `If-Match` field value.
    ///   - ifNoneMatch: The raw `If-None-Match` field value.
    ///   - ifModifiedSince: The raw `If-Modified-Since` field value.
    ///   - ifUnmodifiedSince: The raw `If-Unmodified-Since` field value.
    public init(
        method: String = "GET",
        range: String? = nil,
        ifRange: String? = nil,
        ifMatch: String? = nil,
        ifNoneMatch: String? = nil,
        ifModifiedSince: String? = nil,
        ifUnmodifiedSince: String? = nil
    ) {
        self.method = method
        self.range = range
        self.ifRange = ifRange
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.ifUnmodifiedSince = ifUnmodifiedSince
    }
}

/// Server behaviour switches for the decision, used to emulate servers with limited range support.
package struct DecisionOptions: Hashable, Sendable {
    /// The most range specs honoured in one request; more and the whole representation is sent.
    public var maxRanges: Int
    /// Behave like a server without range support: always answer in full.
    public var ignoreRange: Bool
    /// Honour `Range` even when `If-Range` does not match, as some broken servers do.
    public var ignoreIfRange: Bool
    /// Treat an `If-Range` entity tag as a mismatch (so the whole representation is sent) and evaluate only dates,
    /// as some CDNs do.
    public var ifRangeDateOnly: Bool

    /// Creates options; the defaults are a conforming server that honours up to 64 ranges.
    ///
    /// - Parameters:
    ///   - maxRanges: The most range specs honoured in one request.
    ///   - ignoreRange: Whether to ignore `Range` altogether.
    ///   - ignoreIfRange: Whether to skip the `If-Range` check.
    ///   - ifRangeDateOnly: Whether an `If-Range` entity tag never matches.
    public init(
        maxRanges: Int = 64, ignoreRange: Bool = false, ignoreIfRange: Bool = false, ifRangeDateOnly: Bool = false
    ) {
        self.maxRanges = maxRanges
        self.ignoreRange = ignoreRange
        self.ignoreIfRange = ignoreIfRange
        self.ifRangeDateOnly = ifRangeDateOnly
    }
}

/// The status-level outcome of a request, before any headers or body are planned.
package enum ResponseDecision: Hashable, Sendable {
    /// 200 with the whole representation.
    case full
    /// 206 with these ranges: one means a single-part body, several mean `multipart/byteranges`.
    case partial([ClosedRange<UInt64>])
    /// 304 Not Modified.
    case notModified
    /// 412 Precondition Failed.
    case preconditionFailed
    /// 416 Range Not Satisfiable.
    case rangeNotSatisfiable
}

/// Chooses between 200, 206, 304, 412 and 416 for a request on an existing representation.
package enum RequestDecision {
    /// Evaluates preconditions and range in the order of RFC 9110 §13.2.2.
    ///
    /// 1. `If-Match`: `*` passes; a tag list passes only on a strong match with the current `ETag`. A failing or
    ///    malformed field gives 412.
    /// 2. Without `If-Match`, `If-Unmodified-Since`: 412 when `Last-Modified` is later. Skipped when unparsable or
    ///    when there is no `Last-Modified`.
    /// 3. `If-None-Match`: `*` or a weak match gives 304 for GET and HEAD, 412 otherwise. A malformed field is ignored.
    /// 4. Without `If-None-Match` (even a malformed one), for GET and HEAD, `If-Modified-Since`: 304 when
    ///    `Last-Modified` is not later. Skipped when unparsable or when there is no `Last-Modified`.
    /// 5. `Range`, for GET only, guarded by `If-Range` (an entity tag never matches with
    ///    ``DecisionOptions/ifRangeDateOnly``), then resolved by ``RangeHeader/evaluate(length:maxRanges:)``.
    ///
    /// - Parameters:
    ///   - request: The method and raw fields.
    ///   - representation: The current representation's length and validators.
    ///   - options: Server behaviour switches.
    /// - Returns: The decision; never `.partial` with an empty list.
    public static func decide(
        _ request: ConditionalRequest,
        representation: RepresentationMetadata,
        options: DecisionOptions = .init()
    ) -> ResponseDecision {
        switch outcome(request, representation: representation, options: options) {
        case .full: .full
        case .singleRange(let range): .partial([range])
        case .multipleRanges(let ranges): .partial(ranges)
        case .notModified: .notModified
        case .preconditionFailed: .preconditionFailed
        case .rangeNotSatisfiable: .rangeNotSatisfiable
        }
    }

    /// ``ResponseDecision`` as the server's own router consumes it: a single range is held inline, so a
    /// single-range request, nearly every request, allocates no array on its way through the decision.
    enum Outcome: Hashable, Sendable {
        /// 200 with the whole representation.
        case full
        /// 206 with this one range, single-part.
        case singleRange(ClosedRange<UInt64>)
        /// 206 with these two or more ranges, as `multipart/byteranges`.
        case multipleRanges([ClosedRange<UInt64>])
        /// 304 Not Modified.
        case notModified
        /// 412 Precondition Failed.
        case preconditionFailed
        /// 416 Range Not Satisfiable.
        case rangeNotSatisfiable
    }

    /// The decision of ``decide(_:representation:options:)``, with a single range held inline.
    ///
    /// - Parameters:
    ///   - request: The method and raw fields.
    ///   - representation: The current representation's length and validators.
    ///   - options: Server behaviour switches.
    /// - Returns: The decision.
    static func outcome(
        _ request: ConditionalRequest,
        representation: RepresentationMetadata,
        options: DecisionOptions = .init()
    ) -> Outcome {
        let isSafeRetrieval = request.method == "GET" || request.method == "HEAD"

        if let ifMatch = request.ifMatch {
            guard ifMatchPasses(ifMatch, current: representation.entityTag) else { return .preconditionFailed }
        } else if let value = request.ifUnmodifiedSince, let date = HTTPDate(parsing: value),
            let lastModified = representation.lastModified, lastModified > date
        {
            return .preconditionFailed
        }

        if let ifNoneMatch = request.ifNoneMatch {
            if let condition = EntityTagCondition.parse(ifNoneMatch),
                ifNoneMatchMatches(condition, current: representation.entityTag)
            {
                return isSafeRetrieval ? .notModified : .preconditionFailed
            }
        } else if isSafeRetrieval, let value = request.ifModifiedSince, let date = HTTPDate(parsing: value),
            let lastModified = representation.lastModified, lastModified <= date
        {
            return .notModified
        }

        // HEAD is answered with the headers of a 200 GET, so it never becomes partial.
        guard request.method == "GET", !options.ignoreRange, let rangeValue = request.range,
            let specs = RangeSpecs(parsing: rangeValue)
        else { return .full }

        if let ifRange = request.ifRange, !options.ignoreIfRange,
            !ifRangeMatches(ifRange, representation: representation, dateOnly: options.ifRangeDateOnly)
        {
            return .full
        }

        switch specs.evaluate(length: representation.length, maxRanges: options.maxRanges) {
        case .ignore:
            return .full
        case .unsatisfiable:
            return .rangeNotSatisfiable
        case .single(let range):
            return .singleRange(range)
        case .multiple(let ranges):
            return .multipleRanges(ranges)
        }
    }

    private static func ifMatchPasses(_ value: String, current: EntityTag?) -> Bool {
        switch EntityTagCondition.parse(value) {
        case nil:
            // A malformed precondition cannot be shown to hold; failing is the safe reading for state-changing use.
            return false
        case .any:
            return true
        case .tags(let tags):
            guard let current else { return false }
            return tags.contains { $0.matchesStrongly(current) }
        }
    }

    private static func ifNoneMatchMatches(_ condition: EntityTagCondition, current: EntityTag?) -> Bool {
        switch condition {
        case .any:
            return true
        case .tags(let tags):
            guard let current else { return false }
            return tags.contains { $0.matchesWeakly(current) }
        }
    }

    /// RFC 9110 §13.1.5: only a strong validator can vouch that byte ranges of old and new representation line up.
    /// With `dateOnly`, an entity tag never matches (a CDN that compares dates only).
    private static func ifRangeMatches(
        _ value: String, representation: RepresentationMetadata, dateOnly: Bool
    ) -> Bool {
        let trimmed = value.drop { $0 == " " || $0 == "\t" }
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            guard !dateOnly, let tag = EntityTag(parsing: value), let current = representation.entityTag else {
                return false
            }
            return tag.matchesStrongly(current)
        }
        guard let date = HTTPDate(parsing: value), let lastModified = representation.lastModified else {
            return false
        }
        return date == lastModified
    }
}
