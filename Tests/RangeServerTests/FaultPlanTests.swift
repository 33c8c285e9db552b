import Testing

@testable import RangeServer

@Suite("QueryString")
struct QueryStringTests {
    @Test("splits on & and the first =, keeping order and empty values")
    func splits() {
        let pairs = QueryString.parse("drop-after=2400K&seed=7&chunked&a=b=c")
        #expect(pairs.map(\.key) == ["drop-after", "seed", "chunked", "a"])
        #expect(pairs.map(\.value) == ["2400K", "7", "", "b=c"])
    }

    @Test("tolerates empty parts and a leading question mark")
    func emptyParts() {
        let pairs = QueryString.parse("?&&a=1&&=2&")
        #expect(pairs.map(\.key) == ["a", ""])
        #expect(pairs.map(\.value) == ["1", "2"])
        #expect(QueryString.parse("").isEmpty)
    }

    @Test("percent-decodes, decodes + as space, and keeps malformed escapes literally")
    func decodes() {
        let pairs = QueryString.parse(
            "redirect-location=%2Fbytes%2F1M%3Fseed%3D1&q=a+b%20c&bad=%zz%4&tail=%&utf=%C3%A9")
        #expect(pairs[0].value == "/bytes/1M?seed=1")
        #expect(pairs[1].value == "a b c")
        #expect(pairs[2].value == "%zz%4")
        #expect(pairs[3].value == "%")
        #expect(pairs[4].value == "é")
    }

    @Test("an encoded & or = does not split")
    func encodedSeparators() {
        let pairs = QueryString.parse("a%26b=c%3Dd")
        #expect(pairs.count == 1)
        #expect(pairs[0].key == "a&b")
        #expect(pairs[0].value == "c=d")
    }
}

@Suite("FaultPlan")
struct FaultPlanTests {
    private func parse(_ query: String) throws -> (plan: FaultPlan, passthrough: [(key: String, value: String)]) {
        try FaultPlan.parse(query: QueryString.parse(query))
    }

    /// The error's message, or `nil` when parsing succeeded.
    private func failure(_ query: String) -> String? {
        do {
            _ = try parse(query)
            return nil
        } catch let error as RangeServerError {
            #expect(error ~= RangeServerError.invalidFault(""))
            return error.message
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    /// A valid value for each key: its declared example.
    static func sampleValue(_ key: FaultKey) -> String {
        key.example
    }

    @Test("an empty plan is empty and names nothing")
    func emptyPlan() throws {
        let plan = FaultPlan()
        #expect(plan.isEmpty)
        #expect(plan.appliedNames.isEmpty)
        #expect(plan.stallFor == FaultPlan.defaultStallDuration)
        #expect(try parse("").plan.isEmpty)
        #expect(try parse("ignore-range=0&chunked=false").plan.isEmpty)
    }

    @Test("isEmpty is false with any one fault set alone, and agrees with comparing to an empty plan")
    func isEmptyNoticesEveryFault() throws {
        for key in FaultKey.all {
            var plan = FaultPlan()
            try plan.set(key, from: Self.sampleValue(key))
            #expect(!plan.isEmpty, "\(key)")
            #expect(plan.isEmpty == (plan == FaultPlan()), "\(key)")
        }
    }

    @Test("parses every fault")
    func parsesEveryFault() throws {
        let (plan, passthrough) = try parse(
            "drop-after=2400K&stall-after=1M&stall-for=1.5s&rate=512K&delay=250ms&status=503&retry-after=1"
                + "&ignore-range=1&ignore-if-range=true&no-etag=1&no-last-modified=TRUE&no-accept-ranges=1"
                + "&chunked&misalign-range=4K"
        )
        #expect(passthrough.isEmpty)
        #expect(plan.dropAfter == 2_457_600)
        #expect(plan.resetAfter == nil)
        #expect(plan.stallAfter == 1_048_576)
        #expect(plan.stallFor == .milliseconds(1500))
        #expect(plan.explicitStallFor == .milliseconds(1500))
        #expect(plan.rate == 524_288)
        #expect(plan.delay == .milliseconds(250))
        #expect(plan.status == 503)
        #expect(plan.retryAfter == .seconds(1))
        #expect(plan.ignoreRange && plan.ignoreIfRange && plan.noETag && plan.noLastModified)
        #expect(plan.noAcceptRanges && plan.chunked)
        #expect(!plan.weakETag)
        #expect(plan.misalignRange == 4096)
        #expect(!plan.isEmpty)
    }

    @Test("reset-after and weak-etag parse on their own")
    func resetAndWeak() throws {
        let plan = try parse("reset-after=0&weak-etag=1").plan
        #expect(plan.resetAfter == 0)
        #expect(plan.weakETag)
        #expect(plan.appliedNames == ["reset-after=0", "weak-etag=1"])
    }

    @Test("stall-after alone stalls for the default hour, and does not name stall-for")
    func defaultStall() throws {
        let plan = try parse("stall-after=1K").plan
        #expect(plan.stallFor == .seconds(3600))
        #expect(plan.explicitStallFor == nil)
        #expect(plan.appliedNames == ["stall-after=1K"])
    }

    @Test("resource parameters pass through untouched and in order")
    func passthrough() throws {
        let (plan, passthrough) = try parse(
            "seed=7&drop-after=1M&version=2&hop=3&redirect-code=307&redirect-location=%2Fx")
        #expect(plan.dropAfter == 1_048_576)
        #expect(passthrough.map(\.key) == ["seed", "version", "hop", "redirect-code", "redirect-location"])
        #expect(passthrough.map(\.value) == ["7", "2", "3", "307", "/x"])
    }

    @Test(
        "a bad value names the key and the value",
        arguments: [
            ("drop-after=lots", "drop-after=lots"), ("reset-after=-1", "reset-after=-1"),
            ("stall-after=1.5M", "stall-after=1.5M"), ("stall-after=1&stall-for=soon", "stall-for=soon"),
            ("rate=0", "rate=0"), ("rate=", "rate="), ("delay=-5ms", "delay=-5ms"), ("status=199", "status=199"),
            ("status=600", "status=600"), ("status=abc", "status=abc"), ("status=503&retry-after=-1", "retry-after=-1"),
            ("status=503&retry-after=1.5", "retry-after=1.5"), ("ignore-range=yes", "ignore-range=yes"),
            ("chunked=2", "chunked=2"), ("misalign-range=x", "misalign-range=x"), ("no-etag=on", "no-etag=on"),
        ]
    )
    func badValues(query: String, named: String) throws {
        let message = try #require(failure(query))
        #expect(message.contains(named), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test("an unknown key is rejected, naming key and value")
    func unknownKey() throws {
        let message = try #require(failure("seed=1&drop-afterr=2400K"))
        #expect(message.contains("drop-afterr=2400K"))
        #expect(message.contains("unknown"))
        // Keys are case-sensitive: query keys are lower case in this vocabulary.
        #expect(failure("Drop-After=1") != nil)
    }

    @Test("a repeated fault key is rejected")
    func repeatedKey() throws {
        let message = try #require(failure("drop-after=1&drop-after=2"))
        #expect(message.contains("drop-after=2"))
    }

    @Test(
        "inconsistent combinations are rejected",
        arguments: [
            ("stall-for=2s", "stall-for=2s"), ("retry-after=1", "retry-after=1"),
            ("drop-after=1&reset-after=2", "reset-after=2"), ("no-etag=1&weak-etag=1", "weak-etag"),
        ]
    )
    func combinations(query: String, named: String) throws {
        let message = try #require(failure(query))
        #expect(message.contains(named), "\(message)")
    }

    @Test("messages stay on one line whatever the client sends")
    func sanitizedMessage() throws {
        let message = try #require(failure("drop-after=%0Aevil%0D"))
        #expect(!message.contains("\n") && !message.contains("\r"))
        let long = try #require(failure("x=" + String(repeating: "a", count: 500)))
        #expect(long.count < 200)
    }

    @Test("appliedNames lists canonical key=value in canonical order")
    func appliedNames() throws {
        let plan = try parse(
            "chunked=1&drop-after=2457600&delay=1.5s&status=503&retry-after=2&stall-after=0&stall-for=250ms"
        )
        .plan
        #expect(
            plan.appliedNames == [
                "delay=1500ms", "status=503", "retry-after=2", "drop-after=2400K", "stall-after=0", "stall-for=250ms",
                "chunked=1",
            ]
        )
    }

    @Test("appliedNames joined with & parses back to an equal plan")
    func appliedNamesRoundTrip() throws {
        for query in [
            "drop-after=2400K", "reset-after=5&weak-etag=1&rate=1000", "stall-after=1M&stall-for=0.0000015s",
            "status=429&retry-after=0&no-accept-ranges=1&ignore-if-range=1&misalign-range=1T&delay=2",
        ] {
            let plan = try parse(query).plan
            #expect(try parse(plan.appliedNames.joined(separator: "&")).plan == plan, "\(query)")
        }
    }

    @Test("merging: the query wins field by field, coupled faults move together")
    func merging() throws {
        let step = try parse(
            "drop-after=2400K&stall-after=1M&stall-for=5s&status=503&retry-after=3&weak-etag=1&rate=1K"
        )
        .plan
        let query = try parse("reset-after=1K&stall-after=2M&status=500&no-etag=1&chunked=1").plan
        let merged = query.merged(over: step)
        #expect(merged.dropAfter == nil)
        #expect(merged.resetAfter == 1024)
        #expect(merged.stallAfter == 2 << 20)
        #expect(merged.explicitStallFor == nil, "the query's stall-after brings its own (default) duration")
        #expect(merged.status == 500)
        #expect(merged.retryAfter == nil, "the query's status brings its own retry-after")
        #expect(merged.noETag && !merged.weakETag)
        #expect(merged.rate == 1024, "unset in the query, kept from the step")
        #expect(merged.chunked)
    }

    @Test("merging an empty plan changes nothing, and merging over an empty plan gives the plan")
    func mergingEmpty() throws {
        let plan = try parse("drop-after=1&delay=1s&ignore-range=1&misalign-range=2").plan
        #expect(FaultPlan().merged(over: plan) == plan)
        #expect(plan.merged(over: FaultPlan()) == plan)
    }

    @Test("booleans combine with OR when merging")
    func mergingBooleans() throws {
        let step = try parse("ignore-range=1").plan
        let query = try parse("ignore-range=0&no-last-modified=1").plan
        let merged = query.merged(over: step)
        #expect(merged.ignoreRange)
        #expect(merged.noLastModified)
    }

    @Test("every fault key is accepted by the parser")
    func everyKeyKnown() throws {
        for key in FaultKey.all {
            var query = "\(key.name)=\(Self.sampleValue(key))"
            if key == .stallFor { query += "&stall-after=1" }
            if key == .retryAfter { query += "&status=503" }
            if key == .probability { query += "&drop-after=1" }
            if key == .faultSeed { query += "&probability=0.5&drop-after=1" }
            if key == .rstCode { query += "&rst-stream-after=1" }
            if key == .goAway { query += "&goaway-after=1" }
            #expect(try !parse(query).plan.isEmpty, "\(key)")
        }
    }
}
