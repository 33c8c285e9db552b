import Testing

@testable import RangeServer

/// Parsing of the validator, status-variant and probability faults: values, canonical names and the 400s.
@Suite("FaultPlan: validators, status variants, probability")
struct FaultPlanVariantTests {
    private func plan(_ query: String) throws -> FaultPlan {
        try FaultPlan.parse(query: QueryString.parse(query)).plan
    }

    /// The one-line message of the 400, or nil when the query parsed.
    private func failure(_ query: String) -> String? {
        do {
            _ = try plan(query)
            return nil
        } catch let error as RangeServerError {
            return error.message
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    @Test("each new fault parses and names itself canonically")
    func parsesAndNames() throws {
        let parsed = try plan(
            "etag-salt=edge-2&if-range=date-only&416-shape=no-content-range&content-range-on-200=true&head=405")
        #expect(parsed.etagSalt == "edge-2")
        #expect(parsed.ifRangeDateOnly)
        #expect(parsed.unsatisfiableShape == .noContentRange)
        #expect(parsed.contentRangeOn200)
        #expect(parsed.head == .refuse405)
        #expect(
            parsed.appliedNames == [
                "etag-salt=edge-2", "if-range=date-only", "416-shape=no-content-range", "content-range-on-200=1",
                "head=405",
            ])
        #expect(try plan("416-shape=html-body").unsatisfiableShape == .htmlBody)
        #expect(try plan("content-range-on-200=0").isEmpty)
    }

    @Test("probability and fault-seed parse to millionths and a seed, and name themselves canonically")
    func probabilityNames() throws {
        let parsed = try plan("drop-after=1K&probability=0.50&fault-seed=7")
        #expect(parsed.probability == 500_000)
        #expect(parsed.faultSeed == 7)
        #expect(parsed.appliedNames == ["drop-after=1K", "probability=0.5", "fault-seed=7"])
        #expect(try plan("status=503&probability=1").probability == 1_000_000)
        #expect(try plan("status=503&probability=.000001").probability == 1)
        #expect(try plan("status=503&probability=1.0").appliedNames == ["status=503", "probability=1"])
    }

    @Test("appliedNames of the new faults parse back to an equal plan")
    func roundTrip() throws {
        for query in [
            "etag-salt=a.b_c&weak-etag=1", "if-range=date-only&416-shape=html-body",
            "reset-after=1M&probability=0.125&fault-seed=18446744073709551615", "head=405&probability=0.000001",
        ] {
            let parsed = try plan(query)
            #expect(try plan(parsed.appliedNames.joined(separator: "&")) == parsed, "\(query)")
        }
    }

    @Test(
        "an unknown value is a 400 naming the parameter and the value",
        arguments: [
            "etag-salt=", "etag-salt=has space", "etag-salt=\"quoted\"",
            "etag-salt=" + String(repeating: "x", count: 33),
            "if-range=etag-only", "if-range=1", "416-shape=empty", "416-shape=", "content-range-on-200=yes",
            "head=404", "head=1", "probability=0", "probability=1.5", "probability=0.5.5", "probability=-0.5",
            "probability=0.1234567", "probability=1e-3", "probability=.", "probability=", "fault-seed=-1",
            "fault-seed=x", "fault-seed=18446744073709551616",
        ]
    )
    func unknownValues(query: String) throws {
        let full = query.hasPrefix("probability") ? query + "&drop-after=1" : query
        let withCompanion = query.hasPrefix("fault-seed") ? full + "&probability=0.5&drop-after=1" : full
        let message = try #require(failure(withCompanion))
        let key = String(query.prefix { $0 != "=" })
        #expect(message.contains(key + "="), "\(message)")
        #expect(message.contains("expected"), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test(
        "a missing companion or a contradictory combination is a 400 naming the parameter",
        arguments: [
            ("probability=0.5", "probability=0.5 requires another fault"),
            ("probability=0.5&fault-seed=3", "probability=0.5 requires another fault"),
            ("fault-seed=3&drop-after=1", "fault-seed=3 requires probability"),
            ("etag-salt=e2&no-etag=1", "etag-salt=e2 cannot be combined with no-etag"),
            ("if-range=date-only&ignore-if-range=1", "if-range=date-only cannot be combined with ignore-if-range"),
        ]
    )
    func combinations(query: String, message expected: String) throws {
        let message = try #require(failure(query))
        #expect(message.contains(expected), "\(message)")
    }

    @Test("merging: probability and fault-seed move together, the rest field by field")
    func merging() throws {
        let step = try plan("drop-after=1K&probability=0.5&fault-seed=9&etag-salt=a&416-shape=html-body")
        let query = try plan("status=503&probability=0.25&head=405")
        let merged = query.merged(over: step)
        #expect(merged.probability == 250_000)
        #expect(merged.faultSeed == nil, "the query's probability brings its own (default) seed")
        #expect(merged.etagSalt == "a")
        #expect(merged.unsatisfiableShape == .htmlBody)
        #expect(merged.head == .refuse405)
        #expect(try plan("etag-salt=b").merged(over: step).etagSalt == "b")
    }

    @Test("chanceOnly keeps only probability and fault-seed")
    func chanceOnly() throws {
        let parsed = try plan("drop-after=1K&no-etag=1&probability=0.5&fault-seed=2")
        #expect(parsed.chanceOnly.appliedNames == ["probability=0.5", "fault-seed=2"])
        #expect(parsed.withoutChance.appliedNames == ["drop-after=1K", "no-etag=1"])
    }
}

/// The probability draw itself: a pure function of probability, seed and request number.
@Suite("FaultChance")
struct FaultChanceTests {
    @Test("probability 1 always applies; one in a million almost never")
    func extremes() {
        for draw in UInt64(1)...1000 {
            #expect(FaultChance.applies(millionths: 1_000_000, seed: 0, draw: draw))
        }
        let rare = (UInt64(1)...10_000).filter { FaultChance.applies(millionths: 1, seed: 0, draw: $0) }
        #expect(rare.count <= 2)
    }

    @Test("about half of the draws apply at 0.5, and a different seed gives a different sequence")
    func half() {
        let first = (UInt64(1)...2000).map { FaultChance.applies(millionths: 500_000, seed: 0, draw: $0) }
        let applied = first.filter { $0 }.count
        // Deterministic: the same numbers every run; the bounds only say the generator is not degenerate.
        #expect(applied > 900 && applied < 1100, "\(applied) of 2000")
        let other = (UInt64(1)...2000).map { FaultChance.applies(millionths: 500_000, seed: 1, draw: $0) }
        #expect(first != other)
        let again = (UInt64(1)...2000).map { FaultChance.applies(millionths: 500_000, seed: 0, draw: $0) }
        #expect(first == again)
    }

    @Test("the documented formula: splitmix64(seed + k * golden) mod 1e6 < P * 1e6")
    func formula() {
        // SplitMix64's published first output for state 0 after one increment (seed 0, draw 1).
        #expect(FaultChance.splitMix64(0x9E37_79B9_7F4A_7C15) == 0xE220_A839_7B1D_CDAF)
        let x = FaultChance.splitMix64(0x9E37_79B9_7F4A_7C15) % 1_000_000
        #expect(FaultChance.applies(millionths: UInt32(x) + 1, seed: 0, draw: 1))
        #expect(!FaultChance.applies(millionths: UInt32(x), seed: 0, draw: 1) || x == 0)
    }

    @Test("millionths parse and format", arguments: [("0.5", 500_000), (".25", 250_000), ("1", 1_000_000)])
    func millionths(text: String, value: UInt32) {
        #expect(FaultChance.parseMillionths(text) == value)
        #expect(FaultChance.parseMillionths(FaultChance.formatMillionths(value)) == value)
    }
}
