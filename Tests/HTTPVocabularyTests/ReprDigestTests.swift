import HTTPVocabulary
import PropertyBased
import Testing

@Suite("Repr-Digest and Want-Repr-Digest")
struct ReprDigestTests {
    /// SHA-256 of the empty string.
    static let emptySHA256: [UInt8] = [
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
        0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
    ]

    @Test("serializes as RFC 9530's example spells it")
    func serializes() {
        let field = ReprDigest([("sha-256", Self.emptySHA256)])
        #expect(field.headerValue == "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")
        let two = ReprDigest([("sha-256", Self.emptySHA256), ("unixsum", [1, 2])])
        #expect(two.headerValue == "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:, unixsum=:AQI=:")
    }

    @Test("parses members in order and looks one up by algorithm")
    func parses() throws {
        let field = try #require(
            ReprDigest(parsing: "sha-512=:AAAA:, sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"))
        #expect(field["sha-256"] == Self.emptySHA256)
        #expect(field["sha-512"] == [0, 0, 0])
        #expect(field["md5"] == nil)
        #expect(field.digests.map { $0.algorithm } == ["sha-512", "sha-256"])
    }

    @Test(
        "a field that is not a structured Dictionary gives nil",
        arguments: ["SHA-256=:AAAA:", "sha-256=:AAAA", "sha-256=:AA AA:", "sha-256=:AAAA:,", "=:AAAA:"])
    func rejectsInvalid(value: String) {
        #expect(ReprDigest(parsing: value) == nil)
    }

    @Test("members that are not byte sequences, or not base64, are skipped")
    func skipsOtherMembers() throws {
        let field = try #require(ReprDigest(parsing: "sha-256=1, sha-512=\"x\", md5=:A=B=:, crc32c=:AAAAAA==:"))
        #expect(field["sha-256"] == nil)
        #expect(field["sha-512"] == nil)
        #expect(field["md5"] == nil)
        #expect(field["crc32c"] == [0, 0, 0, 0])
        // Foundation decodes this misplaced '=' to bytes that are not the digest's (…b814 for …b855).
        let misplaced = try #require(ReprDigest(parsing: "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuF=U:"))
        #expect(misplaced["sha-256"] == nil)
    }

    @Test("any bytes round-trip through serializing and parsing")
    func roundTrips() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...255).array(of: 0...64)) { values in
            let bytes = values.map { UInt8($0) }
            let field = ReprDigest([("sha-256", bytes)])
            #expect(ReprDigest(parsing: field.headerValue)?["sha-256"] == bytes)
        }
    }

    @Test(
        "Want-Repr-Digest accepts an algorithm listed above preference 0",
        arguments: [
            ("sha-256=1", true), ("sha-256=10", true), ("sha-256", true), ("sha-512=3, sha-256=2", true),
            ("sha-256=0", false), ("sha-512=1", false), ("unixsum=3", false), ("", false), ("sha-256=?0", false),
            ("sha-256=\"1\"", false), ("SHA-256=1", false), ("sha-256=1;q=2", true),
        ])
    func wantReprDigest(value: String, acceptsSHA256: Bool) {
        #expect((WantReprDigest(parsing: value)?.accepts("sha-256") ?? false) == acceptsSHA256)
    }

    @Test("Want-Repr-Digest keeps each preference")
    func preferences() {
        #expect(WantReprDigest(parsing: "sha-512=3, sha-256=10")?.preferences == ["sha-512": 3, "sha-256": 10])
        #expect(WantReprDigest(parsing: "sha-256=1, sha-256=0")?.preferences == ["sha-256": 0])
    }
}
