/// Fuzzes `RequestDecision.decide` with fuzzed method and header fields against a grid of representations
/// (lengths, strong/weak/no ETag, with/without Last-Modified) and options.
///
/// The input is split on LF into method, Range, If-Range, If-Match, If-None-Match, If-Modified-Since and
/// If-Unmodified-Since; missing lines are absent fields.
///
/// Invariants: 206 only for GET with a parsable Range, with exactly the ranges `evaluate` gives; 416 only
/// when `evaluate` says unsatisfiable; 304 only for GET/HEAD with a cache validator field; 412 only with
/// a precondition field; nothing partial when ranges are ignored; a 206 behind If-Range means a strong
/// validator matched; and `ignoreIfRange` changes nothing without If-Range.
@_cdecl("LLVMFuzzerTestOneInput")
public func requestDecisionFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = fuzzText(start, count)
    let lines = text.split(separator: "\n", maxSplits: 6, omittingEmptySubsequences: false).map(String.init)
    func field(_ index: Int) -> String? { index < lines.count ? lines[index] : nil }
    let request = ConditionalRequest(
        method: field(0) ?? "GET", range: field(1), ifRange: field(2), ifMatch: field(3), ifNoneMatch: field(4),
        ifModifiedSince: field(5), ifUnmodifiedSince: field(6)
    )
    let lastModified = HTTPDate(secondsSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
    for length: UInt64 in [0, 1, 1000, UInt64.max] {
        for tag in [nil, EntityTag(opaqueTag: "abc"), EntityTag(opaqueTag: "abc", isWeak: true)] {
            for date in [nil, lastModified] {
                let representation = RepresentationMetadata(length: length, entityTag: tag, lastModified: date)
                for options in [
                    DecisionOptions(), DecisionOptions(maxRanges: 1), DecisionOptions(ignoreRange: true),
                    DecisionOptions(ignoreIfRange: true), DecisionOptions(ifRangeDateOnly: true),
                ] {
                    check(request, representation, options)
                }
            }
        }
    }
    return 0
}

private func check(_ request: ConditionalRequest, _ representation: RepresentationMetadata, _ options: DecisionOptions)
{
    let decision = RequestDecision.decide(request, representation: representation, options: options)
    fuzzCheck(decision == RequestDecision.decide(request, representation: representation, options: options), "pure")
    let header = request.range.flatMap(RangeHeader.parse)
    let evaluation = header?.evaluate(length: representation.length, maxRanges: options.maxRanges)
    let isGet = request.method == "GET"

    switch decision {
    case .full:
        break
    case .partial(let ranges):
        fuzzCheck(isGet && !options.ignoreRange, "206 only for GET with ranges honoured")
        fuzzCheck(!ranges.isEmpty, "206 has ranges")
        fuzzCheck(evaluation == .satisfiable(ranges), "206 ranges are evaluate's")
        for range in ranges { fuzzCheck(range.upperBound < representation.length, "\(range) within length") }
        if let ifRange = request.ifRange, !options.ignoreIfRange {
            let tagMatches = EntityTag(parsing: ifRange).map { tag in
                representation.entityTag.map(tag.matchesStrongly) ?? false
            }
            let dateMatches = HTTPDate(parsing: ifRange).map { $0 == representation.lastModified }
            fuzzCheck(tagMatches == true || dateMatches == true, "206 behind If-Range needs a strong match")
            if options.ifRangeDateOnly {
                fuzzCheck(dateMatches == true, "date-only: 206 behind If-Range needs the date to match")
            }
        }
    case .rangeNotSatisfiable:
        fuzzCheck(isGet && !options.ignoreRange, "416 only for GET with ranges honoured")
        fuzzCheck(evaluation == .unsatisfiable, "416 only when unsatisfiable")
    case .notModified:
        fuzzCheck(isGet || request.method == "HEAD", "304 only for GET and HEAD")
        fuzzCheck(request.ifNoneMatch != nil || request.ifModifiedSince != nil, "304 needs a cache validator field")
    case .preconditionFailed:
        fuzzCheck(
            request.ifMatch != nil || request.ifUnmodifiedSince != nil || request.ifNoneMatch != nil,
            "412 needs a precondition field"
        )
    }

    if request.ifRange == nil {
        var other = options
        other.ignoreIfRange.toggle()
        fuzzCheck(
            RequestDecision.decide(request, representation: representation, options: other) == decision,
            "ignoreIfRange is inert without If-Range"
        )
    }
}
