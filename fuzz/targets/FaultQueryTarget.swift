/// Fuzzes the fault query path: `QueryString.parse` followed by `FaultPlan.parse(query:)`.
///
/// Invariants: only passthrough keys are passed through; a rejection is an `invalidFault` error whose
/// message is one line without control characters (it becomes a 400 body and an access-log line); an
/// accepted plan prints (`appliedNames`) to a query that parses back to an equal plan, and merging it
/// over an empty plan or over itself changes nothing; every applied name is a declared `FaultKey`, and the body
/// faults come out in the reader's order; a value sent as a header field holds no control character.
@_cdecl("LLVMFuzzerTestOneInput")
public func faultQueryFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = fuzzText(start, count)
    let pairs = QueryString.parse(text)
    fuzzCheck(pairs.count <= text.utf8.count, "no more pairs than bytes")
    do {
        let (plan, passthrough) = try FaultPlan.parse(query: pairs)
        for pair in passthrough {
            fuzzCheck(FaultPlan.passthroughKeys.contains(pair.key), "passthrough key \(pair.key)")
        }
        let printed = plan.appliedNames.joined(separator: "&")
        let reparsed = try? FaultPlan.parse(query: QueryString.parse(printed))
        fuzzCheck(reparsed?.plan == plan, "plan round trip of \(printed)")
        fuzzCheck(plan.isEmpty == plan.appliedNames.isEmpty, "an empty plan applies no fault")
        fuzzCheck(plan.merged(over: FaultPlan()) == plan, "merging over nothing keeps \(printed)")
        fuzzCheck(plan.merged(over: plan) == plan, "merging over itself keeps \(printed)")
        for name in plan.appliedNames {
            fuzzCheck(FaultKey.named[String(name.prefix { $0 != "=" })] != nil, "declared key in \(name)")
        }
        let precedences = plan.bodyFaults.map(\.precedence)
        fuzzCheck(precedences == precedences.sorted(), "body faults in the reader's order for \(printed)")
        if let rate = plan.rate { fuzzCheck(rate > 0, "rate above zero") }
        if let status = plan.status { fuzzCheck((200...599).contains(status), "status \(status) in range") }
        for value in [plan.contentRangeRaw, plan.contentType, plan.contentDisposition, plan.rejectHeader] {
            guard let value else { continue }
            let hasControl = value.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            fuzzCheck(!hasControl, "a header value without control characters: \(value.debugDescription)")
        }
    } catch let error as RangeServerError {
        fuzzCheck(RangeServerError.invalidFault("") ~= error, "rejections are invalidFault: \(error)")
        let hasControl = error.message.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        fuzzCheck(!hasControl, "400 message without control characters: \(error.message.debugDescription)")
    } catch {
        fuzzCheck(false, "unexpected error type \(error)")
    }
    return 0
}
