import HTTPVocabulary
import RangeServer
import Testing

@Suite("Request decision")
struct RequestDecisionTests {
    static let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let earlier = "Sun, 06 Nov 1994 08:49:36 GMT"
    static let later = "Sun, 06 Nov 1994 08:49:38 GMT"
    static let strongTag = EntityTag(opaqueTag: "v1", isWeak: false)
    static let weakTag = EntityTag(opaqueTag: "v1", isWeak: true)

    static let strong = RepresentationMetadata(
        length: 1000, entityTag: strongTag, lastModified: HTTPDate(parsing: lastModified))
    static let weak = RepresentationMetadata(
        length: 1000, entityTag: weakTag, lastModified: HTTPDate(parsing: lastModified))
    static let bare = RepresentationMetadata(length: 1000)

    private func decide(
        _ request: ConditionalRequest,
        _ representation: RepresentationMetadata = strong,
        options: DecisionOptions = .init()
    ) -> ResponseDecision {
        RequestDecision.decide(request, representation: representation, options: options)
    }

    // MARK: Plain requests and Range

    @Test("no headers gives 200")
    func plain() {
        #expect(decide(ConditionalRequest()) == .full)
        #expect(decide(ConditionalRequest(method: "HEAD")) == .full)
        #expect(ConditionalRequest().method == "GET")
    }

    @Test("a valid Range on GET gives 206 with the resolved ranges")
    func rangeOnGet() {
        #expect(decide(ConditionalRequest(range: "bytes=0-99")) == .partial([0...99]))
        #expect(decide(ConditionalRequest(range: "bytes=-10,0-9")) == .partial([990...999, 0...9]))
        #expect(decide(ConditionalRequest(range: "bytes=0-9,10-19")) == .partial([0...19]))
    }

    @Test(
        "HEAD and other methods never get 206 or 416", arguments: ["HEAD", "POST", "PUT", "DELETE", "get", "OPTIONS"])
    func rangeIgnoredForOtherMethods(method: String) {
        #expect(decide(ConditionalRequest(method: method, range: "bytes=0-99")) == .full)
        #expect(decide(ConditionalRequest(method: method, range: "bytes=5000-")) == .full)
    }

    @Test("an unparsable or foreign-unit Range gives 200", arguments: ["bytes=9-1", "items=0-1", "bytes=", "0-99"])
    func unparsableRange(value: String) {
        #expect(decide(ConditionalRequest(range: value)) == .full)
    }

    @Test("an unsatisfiable Range gives 416")
    func unsatisfiable() {
        #expect(decide(ConditionalRequest(range: "bytes=1000-")) == .rangeNotSatisfiable)
        #expect(decide(ConditionalRequest(range: "bytes=-0")) == .rangeNotSatisfiable)
        #expect(
            decide(ConditionalRequest(range: "bytes=0-"), RepresentationMetadata(length: 0)) == .rangeNotSatisfiable)
    }

    @Test("too many ranges and overlapping amplification give 200")
    func abusiveRanges() {
        let options = DecisionOptions(maxRanges: 2)
        #expect(decide(ConditionalRequest(range: "bytes=0-1,4-5"), options: options) == .partial([0...1, 4...5]))
        #expect(decide(ConditionalRequest(range: "bytes=0-1,4-5,8-9"), options: options) == .full)
        #expect(decide(ConditionalRequest(range: "bytes=0-,0-")) == .full)
        let many = "bytes=" + Array(repeating: "0-", count: 10_000).joined(separator: ",")
        #expect(decide(ConditionalRequest(range: many)) == .full)
    }

    @Test("default options honour 64 ranges but not 65")
    func defaultMaxRanges() {
        #expect(DecisionOptions().maxRanges == 64)
        let specs = { (count: Int) in "bytes=" + (0..<count).map { "\($0 * 3)-\($0 * 3)" }.joined(separator: ",") }
        guard case .partial(let ranges) = decide(ConditionalRequest(range: specs(64))) else {
            Issue.record("64 ranges should be honoured")
            return
        }
        #expect(ranges.count == 64)
        #expect(decide(ConditionalRequest(range: specs(65))) == .full)
    }

    @Test("ignoreRange answers 200 even for unsatisfiable ranges")
    func ignoreRange() {
        let options = DecisionOptions(ignoreRange: true)
        #expect(decide(ConditionalRequest(range: "bytes=0-9"), options: options) == .full)
        #expect(decide(ConditionalRequest(range: "bytes=5000-"), options: options) == .full)
    }

    @Test("1 TiB representation with offsets past 2^32")
    func largeRepresentation() {
        let representation = RepresentationMetadata(length: 1 << 40, entityTag: Self.strongTag)
        let request = ConditionalRequest(range: "bytes=4294967296-4294967300", ifRange: "\"v1\"")
        #expect(decide(request, representation) == .partial([4_294_967_296...4_294_967_300]))
        #expect(
            decide(ConditionalRequest(range: "bytes=-1"), representation) == .partial([(1 << 40) - 1...(1 << 40) - 1]))
    }

    // MARK: If-Range

    @Test(
        "If-Range with an entity-tag needs a strong match on both sides",
        arguments: [
            ("\"v1\"", strong, true),
            (" \"v1\" ", strong, true),
            ("\"v2\"", strong, false),
            ("W/\"v1\"", strong, false),
            ("W/\"v1\"", weak, false),
            ("\"v1\"", weak, false),
            ("\"v1\"", bare, false),
            ("\"v1", strong, false),
            ("\"v1\", \"v2\"", strong, false),
        ])
    func ifRangeEntityTag(value: String, representation: RepresentationMetadata, honoured: Bool) {
        let decision = decide(ConditionalRequest(range: "bytes=0-9", ifRange: value), representation)
        #expect(decision == (honoured ? .partial([0...9]) : .full))
    }

    @Test(
        "If-Range with a date needs exact equality with Last-Modified",
        arguments: [
            (lastModified, strong, true),
            ("Sunday, 06-Nov-94 08:49:37 GMT", strong, true),
            ("Sun Nov  6 08:49:37 1994", strong, true),
            (earlier, strong, false),
            (later, strong, false),
            ("not a date", strong, false),
            (lastModified, bare, false),
        ])
    func ifRangeDate(value: String, representation: RepresentationMetadata, honoured: Bool) {
        let decision = decide(ConditionalRequest(range: "bytes=0-9", ifRange: value), representation)
        #expect(decision == (honoured ? .partial([0...9]) : .full))
    }

    @Test("a failed If-Range turns 416 into 200 too")
    func ifRangeMismatchBeforeUnsatisfiable() {
        #expect(decide(ConditionalRequest(range: "bytes=5000-", ifRange: "\"old\"")) == .full)
        #expect(decide(ConditionalRequest(range: "bytes=5000-", ifRange: "\"v1\"")) == .rangeNotSatisfiable)
    }

    @Test("ignoreIfRange honours Range despite a mismatching If-Range")
    func ignoreIfRange() {
        let request = ConditionalRequest(range: "bytes=0-9", ifRange: "\"old\"")
        #expect(decide(request, options: DecisionOptions(ignoreIfRange: true)) == .partial([0...9]))
        #expect(decide(request) == .full)
    }

    @Test("ifRangeDateOnly: an If-Range entity tag never matches, a date is evaluated as usual")
    func ifRangeDateOnly() {
        let options = DecisionOptions(ifRangeDateOnly: true)
        let tagged = ConditionalRequest(range: "bytes=0-9", ifRange: "\"v1\"")
        #expect(decide(tagged) == .partial([0...9]))
        #expect(decide(tagged, options: options) == .full)
        let dated = ConditionalRequest(range: "bytes=0-9", ifRange: Self.lastModified)
        #expect(decide(dated, options: options) == .partial([0...9]))
        let otherDate = ConditionalRequest(range: "bytes=0-9", ifRange: "Sun, 06 Nov 1994 08:49:38 GMT")
        #expect(decide(otherDate, options: options) == .full)
        // Without If-Range the range is served, and an unsatisfiable one is still a 416.
        #expect(decide(ConditionalRequest(range: "bytes=0-9"), options: options) == .partial([0...9]))
        #expect(decide(ConditionalRequest(range: "bytes=5000-"), options: options) == .rangeNotSatisfiable)
    }

    @Test("If-Range without Range has no effect")
    func ifRangeAlone() {
        #expect(decide(ConditionalRequest(ifRange: "\"old\"")) == .full)
    }

    // MARK: If-Match and If-Unmodified-Since

    @Test(
        "If-Match uses strong comparison",
        arguments: [
            ("*", strong, true),
            ("*", bare, true),
            ("\"v1\"", strong, true),
            ("\"v0\", \"v1\"", strong, true),
            ("\"v2\"", strong, false),
            ("W/\"v1\"", strong, false),
            ("\"v1\"", weak, false),
            ("W/\"v1\"", weak, false),
            ("\"v1\"", bare, false),
            ("v1", strong, false),
            ("", strong, false),
        ])
    func ifMatch(value: String, representation: RepresentationMetadata, passes: Bool) {
        let decision = decide(ConditionalRequest(range: "bytes=0-9", ifMatch: value), representation)
        #expect(decision == (passes ? .partial([0...9]) : .preconditionFailed))
    }

    @Test("If-Match failure applies to every method")
    func ifMatchOtherMethods() {
        #expect(decide(ConditionalRequest(method: "PUT", ifMatch: "\"v2\"")) == .preconditionFailed)
        #expect(decide(ConditionalRequest(method: "HEAD", ifMatch: "\"v2\"")) == .preconditionFailed)
        #expect(decide(ConditionalRequest(method: "PUT", ifMatch: "\"v1\"")) == .full)
    }

    @Test(
        "If-Unmodified-Since fails only when modified later",
        arguments: [
            (earlier, strong, ResponseDecision.preconditionFailed),
            (lastModified, strong, .partial([0...9])),
            (later, strong, .partial([0...9])),
            ("garbage", strong, .partial([0...9])),
            (earlier, bare, .partial([0...9])),
        ])
    func ifUnmodifiedSince(value: String, representation: RepresentationMetadata, expected: ResponseDecision) {
        #expect(decide(ConditionalRequest(range: "bytes=0-9", ifUnmodifiedSince: value), representation) == expected)
    }

    @Test("If-Match takes precedence over If-Unmodified-Since")
    func ifMatchBeatsIfUnmodifiedSince() {
        #expect(decide(ConditionalRequest(ifMatch: "\"v1\"", ifUnmodifiedSince: Self.earlier)) == .full)
        #expect(decide(ConditionalRequest(ifMatch: "*", ifUnmodifiedSince: Self.earlier)) == .full)
        #expect(decide(ConditionalRequest(ifMatch: "\"v2\"", ifUnmodifiedSince: Self.later)) == .preconditionFailed)
    }

    // MARK: If-None-Match and If-Modified-Since

    @Test(
        "If-None-Match uses weak comparison",
        arguments: [
            ("*", strong, true),
            ("\"v1\"", strong, true),
            ("W/\"v1\"", strong, true),
            ("\"v1\"", weak, true),
            ("W/\"v1\"", weak, true),
            ("\"v0\", W/\"v1\"", strong, true),
            ("\"v2\"", strong, false),
            ("\"v1\"", bare, false),
        ])
    func ifNoneMatch(value: String, representation: RepresentationMetadata, matches: Bool) {
        let get = decide(ConditionalRequest(range: "bytes=0-9", ifNoneMatch: value), representation)
        #expect(get == (matches ? .notModified : .partial([0...9])))
        let head = decide(ConditionalRequest(method: "HEAD", ifNoneMatch: value), representation)
        #expect(head == (matches ? .notModified : .full))
        let put = decide(ConditionalRequest(method: "PUT", ifNoneMatch: value), representation)
        #expect(put == (matches ? .preconditionFailed : .full))
    }

    @Test("a malformed If-None-Match is ignored")
    func malformedIfNoneMatch() {
        #expect(decide(ConditionalRequest(range: "bytes=0-9", ifNoneMatch: "v1")) == .partial([0...9]))
        #expect(decide(ConditionalRequest(method: "PUT", ifNoneMatch: "*, \"v1\"")) == .full)
    }

    @Test(
        "If-Modified-Since gives 304 unless modified later",
        arguments: [
            (lastModified, strong, true),
            (later, strong, true),
            (earlier, strong, false),
            ("garbage", strong, false),
            (later, bare, false),
        ])
    func ifModifiedSince(value: String, representation: RepresentationMetadata, notModified: Bool) {
        let get = decide(ConditionalRequest(ifModifiedSince: value), representation)
        #expect(get == (notModified ? .notModified : .full))
        let head = decide(ConditionalRequest(method: "HEAD", ifModifiedSince: value), representation)
        #expect(head == (notModified ? .notModified : .full))
    }

    @Test("If-Modified-Since is ignored for methods other than GET and HEAD")
    func ifModifiedSinceOtherMethods() {
        #expect(decide(ConditionalRequest(method: "POST", ifModifiedSince: Self.later)) == .full)
        #expect(decide(ConditionalRequest(method: "PUT", ifModifiedSince: Self.lastModified)) == .full)
    }

    @Test("If-None-Match beats If-Modified-Since in both directions")
    func ifNoneMatchBeatsIfModifiedSince() {
        // A stale tag wins over a date that alone would give 304.
        #expect(decide(ConditionalRequest(ifNoneMatch: "\"v0\"", ifModifiedSince: Self.later)) == .full)
        // A matching tag gives 304 even though the date alone would give 200.
        #expect(decide(ConditionalRequest(ifNoneMatch: "\"v1\"", ifModifiedSince: Self.earlier)) == .notModified)
        // Present but malformed still suppresses If-Modified-Since (RFC 9110 §13.1.3).
        #expect(decide(ConditionalRequest(ifNoneMatch: "garbage", ifModifiedSince: Self.later)) == .full)
    }

    @Test("304 takes precedence over Range")
    func notModifiedBeatsRange() {
        #expect(decide(ConditionalRequest(range: "bytes=0-9", ifNoneMatch: "\"v1\"")) == .notModified)
        #expect(decide(ConditionalRequest(range: "bytes=5000-", ifModifiedSince: Self.later)) == .notModified)
    }

    @Test("412 from If-Match takes precedence over If-None-Match and Range")
    func preconditionOrder() {
        let request = ConditionalRequest(range: "bytes=5000-", ifMatch: "\"v2\"", ifNoneMatch: "\"v1\"")
        #expect(decide(request) == .preconditionFailed)
        let unmodified = ConditionalRequest(ifNoneMatch: "\"v1\"", ifUnmodifiedSince: Self.earlier)
        #expect(decide(unmodified) == .preconditionFailed)
    }

    @Test("passing If-Match then matching If-None-Match gives 304")
    func matchThenNoneMatch() {
        #expect(decide(ConditionalRequest(ifMatch: "\"v1\"", ifNoneMatch: "\"v1\"")) == .notModified)
    }
}
