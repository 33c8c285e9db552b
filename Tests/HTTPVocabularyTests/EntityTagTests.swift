import HTTPVocabulary
import Testing

@Suite("Entity tags")
struct EntityTagTests {
    @Test(
        "single tags parse",
        arguments: [
            ("\"xyzzy\"", EntityTag(opaqueTag: "xyzzy", isWeak: false)),
            ("W/\"xyzzy\"", EntityTag(opaqueTag: "xyzzy", isWeak: true)),
            ("\"\"", EntityTag(opaqueTag: "", isWeak: false)),
            ("W/\"\"", EntityTag(opaqueTag: "", isWeak: true)),
            ("  \"a\"\t", EntityTag(opaqueTag: "a", isWeak: false)),
            ("\"a,b\"", EntityTag(opaqueTag: "a,b", isWeak: false)),
            ("\"!#$%&'()*+-./:;<=>?@[]^_`{|}~\"", EntityTag(opaqueTag: "!#$%&'()*+-./:;<=>?@[]^_`{|}~", isWeak: false)),
            ("\"caf\u{E9}\"", EntityTag(opaqueTag: "caf\u{E9}", isWeak: false)),
            ("\"W/\"", EntityTag(opaqueTag: "W/", isWeak: false)),
        ])
    func parsesValid(value: String, expected: EntityTag) {
        #expect(EntityTag(parsing: value) == expected)
    }

    @Test(
        "malformed tags give nil",
        arguments: [
            "", "xyzzy", "\"xyzzy", "xyzzy\"", "w/\"xyzzy\"", "W/xyzzy", "W/ \"x\"", "W\"x\"", "\"a\"b\"", "\"a b\"",
            "\"a\tb\"", "\"a\u{7F}\"", "\"a\u{01}\"", "\"a\"\"b\"", "\"a\",", "*", "W/", "\"a\" \"b\"",
        ])
    func rejectsInvalid(value: String) {
        #expect(EntityTag(parsing: value) == nil)
    }

    @Test("header value round-trips")
    func headerValueRoundTrip() {
        let strong = EntityTag(opaqueTag: "abc-123", isWeak: false)
        let weak = EntityTag(opaqueTag: "abc-123", isWeak: true)
        #expect(strong.headerValue == "\"abc-123\"")
        #expect(weak.headerValue == "W/\"abc-123\"")
        #expect(EntityTag(parsing: strong.headerValue) == strong)
        #expect(EntityTag(parsing: weak.headerValue) == weak)
        #expect(EntityTag(opaqueTag: "x").isWeak == false)
    }

    /// The comparison table from RFC 9110 §8.8.3.2.
    @Test(
        "strong and weak comparison follow RFC 9110 in both directions",
        arguments: [
            ("W/\"1\"", "W/\"1\"", false, true),
            ("W/\"1\"", "W/\"2\"", false, false),
            ("W/\"1\"", "\"1\"", false, true),
            ("\"1\"", "\"1\"", true, true),
            ("\"1\"", "\"2\"", false, false),
        ])
    func comparison(left: String, right: String, strong: Bool, weak: Bool) throws {
        let lhs = try #require(EntityTag(parsing: left))
        let rhs = try #require(EntityTag(parsing: right))
        #expect(lhs.matchesStrongly(rhs) == strong)
        #expect(rhs.matchesStrongly(lhs) == strong)
        #expect(lhs.matchesWeakly(rhs) == weak)
        #expect(rhs.matchesWeakly(lhs) == weak)
    }

    @Test("opaque tags compare case-sensitively")
    func caseSensitive() {
        #expect(!EntityTag(opaqueTag: "abc").matchesWeakly(EntityTag(opaqueTag: "ABC")))
    }
}

@Suite("If-Match and If-None-Match lists")
struct EntityTagConditionTests {
    private static let tagA = EntityTag(opaqueTag: "a", isWeak: false)
    private static let tagB = EntityTag(opaqueTag: "b", isWeak: true)

    @Test(
        "valid lists parse in order",
        arguments: [
            ("*", EntityTagCondition.any),
            (" * ", .any),
            ("\"a\"", .tags([tagA])),
            ("\"a\", W/\"b\"", .tags([tagA, tagB])),
            ("\"a\",W/\"b\"", .tags([tagA, tagB])),
            ("\"a\" ,\tW/\"b\"", .tags([tagA, tagB])),
            ("\"a\",,W/\"b\"", .tags([tagA, tagB])),
            (", \"a\" ,", .tags([tagA])),
            ("\"a,b\", \"c\"", .tags([EntityTag(opaqueTag: "a,b"), EntityTag(opaqueTag: "c")])),
            ("\"*\"", .tags([EntityTag(opaqueTag: "*")])),
        ])
    func parsesValid(value: String, expected: EntityTagCondition) {
        #expect(EntityTagCondition.parse(value) == expected)
    }

    @Test(
        "malformed lists give nil",
        arguments: [
            "", " ", ",", " , ,", "**", "*, \"a\"", "\"a\", *", "a", "\"a\" \"b\"", "\"a\"W/\"b\"", "\"a\",b",
            "\"a", "\"a\",\"b", "w/\"a\"",
        ])
    func rejectsInvalid(value: String) {
        #expect(EntityTagCondition.parse(value) == nil)
    }

    @Test("a long list parses every tag")
    func longList() {
        let value = (0..<5_000).map { "\"t\($0)\"" }.joined(separator: ", ")
        guard case .tags(let tags) = EntityTagCondition.parse(value) else {
            Issue.record("expected a tag list")
            return
        }
        #expect(tags.count == 5_000)
        #expect(tags.last == EntityTag(opaqueTag: "t4999"))
    }
}
