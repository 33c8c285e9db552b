import Testing

@testable import RangeServer

@Suite("ByteSize")
struct ByteSizeTests {
    @Test(
        "parses decimal bytes with 1024-based suffixes in any case",
        arguments: [
            ("0", 0), ("1", 1), ("1048576", 1_048_576), ("2400K", 2_457_600), ("2400k", 2_457_600),
            ("8M", 8_388_608), ("8m", 8_388_608), ("3G", 3_221_225_472), ("1T", 1_099_511_627_776),
            ("1t", 1_099_511_627_776), ("007K", 7168), ("0M", 0),
        ] as [(String, UInt64)]
    )
    func parsesValidSizes(text: String, expected: UInt64) {
        #expect(ByteSize.parse(text) == expected)
    }

    @Test(
        "rejects empty, signed, fractional, spaced, unknown-suffix and overflowing sizes",
        arguments: [
            "", " ", "K", "-1", "+1", "1.5M", "1.0", " 1", "1 ", "1 K", "1KB", "1KiB", "1P", "1e3", "0x10", "１",
            "18446744073709551616", "16777216T", "99999999999999999999K", "1,000",
        ]
    )
    func rejectsInvalidSizes(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test("accepts the largest value that fits and the largest terabyte count that fits")
    func boundaries() {
        #expect(ByteSize.parse("18446744073709551615") == UInt64.max)
        #expect(ByteSize.parse("16777215T") == 16_777_215 << 40)
    }

    @Test(
        "formats with the largest exact suffix",
        arguments: [
            (0, "0"), (1000, "1000"), (1024, "1K"), (2_457_600, "2400K"), (8_388_608, "8M"), (1_048_577, "1048577"),
            (1_099_511_627_776, "1T"), (1536 * 1024, "1536K"),
        ] as [(UInt64, String)])
    func formats(bytes: UInt64, expected: String) {
        #expect(ByteSize.format(bytes) == expected)
    }

    @Test("format and parse round-trip")
    func roundTrip() {
        for value: UInt64 in [0, 1, 1023, 1024, 1025, 3 << 20, 5 << 30, 7 << 40, UInt64.max, UInt64.max - 1023] {
            #expect(ByteSize.parse(ByteSize.format(value)) == value)
        }
    }
}

@Suite("FaultDuration")
struct FaultDurationTests {
    @Test(
        "parses seconds, milliseconds and bare numbers",
        arguments: [
            ("250ms", 250_000_000), ("1.5s", 1_500_000_000), ("2", 2_000_000_000), ("0", 0), ("0s", 0),
            ("0.001s", 1_000_000), ("1.25ms", 1_250_000), ("30S", 30_000_000_000), ("10MS", 10_000_000),
            ("0.000000001s", 1), ("0.0000000019s", 1), ("3600", 3_600_000_000_000),
        ] as [(String, UInt64)]
    )
    func parsesValidDurations(text: String, expected: UInt64) {
        #expect(FaultDuration.nanoseconds(text) == expected)
        #expect(FaultDuration.parse(text) == .nanoseconds(Int64(expected)))
    }

    @Test(
        "rejects negative, empty and malformed durations",
        arguments: [
            "", "s", "ms", "-1s", "-1", "+1s", ".5s", "1.s", "1..5s", "1 s", "1m", "1h", "1e3ms", "abc", "1.5.2s",
            "99999999999999999999s", "1sms",
        ]
    )
    func rejectsInvalidDurations(text: String) {
        #expect(FaultDuration.parse(text) == nil)
    }

    @Test(
        "formats canonically and round-trips",
        arguments: [
            (Duration.seconds(2), "2s"), (.milliseconds(250), "250ms"), (.milliseconds(1500), "1500ms"),
            (.nanoseconds(1_500), "0.0000015s"), (.zero, "0s"), (.seconds(3600), "3600s"),
        ])
    func formats(duration: Duration, expected: String) {
        #expect(FaultDuration.format(duration) == expected)
        #expect(FaultDuration.parse(expected) == duration)
    }
}
