import RangeServer
import Testing

@testable import Conformance

/// The judge's reading of `Retry-After`: delay-seconds, or an HTTP-date measured from the response.
@Suite struct RetryAfterRuleTests {
    /// 2027-01-15 08:00:00 UTC, in milliseconds.
    static let sent: Int64 = 1_800_000_000_000

    @Test func delaySecondsAreReadWhateverTheReference() {
        #expect(RetryAfterRule.wait("120", responseTime: nil) == 120_000)
        #expect(RetryAfterRule.wait(" 5 ", responseTime: Self.sent) == 5000)
        #expect(RetryAfterRule.wait("0", responseTime: Self.sent) == 0)
    }

    @Test func anIMFFixdateIsMeasuredFromTheJournalTime() {
        let date = FaultPlan.RetryAfter.date(secondsAhead: 30).headerValue(now: Self.sent / 1000)
        #expect(RetryAfterRule.wait(date, responseTime: Self.sent) == 30_000)
        // The response ended 400 ms into its second: the date is 29.6 s away.
        #expect(RetryAfterRule.wait(date, responseTime: Self.sent + 400) == 29_600)
    }

    @Test func theResponsesDateFieldWinsOverTheJournalTime() {
        let date = FaultPlan.RetryAfter.date(secondsAhead: 30).headerValue(now: Self.sent / 1000)
        let sentField = FaultPlan.RetryAfter.date(secondsAhead: -10).headerValue(now: Self.sent / 1000)
        #expect(RetryAfterRule.wait(date, responseDate: sentField, responseTime: Self.sent) == 40_000)
        // An unreadable Date falls back to the journal time.
        #expect(RetryAfterRule.wait(date, responseDate: "yesterday", responseTime: Self.sent) == 30_000)
    }

    @Test func theObsoleteDateFormsAreReadToo() {
        // 1994-11-06 08:49:37 UTC in RFC 850 and asctime form, measured from 10 s before it.
        let reference: Int64 = 784_111_777_000 - 10_000
        #expect(RetryAfterRule.wait("Sunday, 06-Nov-94 08:49:37 GMT", responseTime: reference) == 10_000)
        #expect(RetryAfterRule.wait("Sun Nov  6 08:49:37 1994", responseTime: reference) == 10_000)
        #expect(RetryAfterRule.wait("Sun, 06 Nov 1994 08:49:37 GMT", responseTime: reference) == 10_000)
    }

    @Test func aPastDateAsksForNoWait() {
        #expect(RetryAfterRule.wait("Sun, 06 Nov 1994 08:49:37 GMT", responseTime: Self.sent) == 0)
    }

    @Test func anythingElseIsNoRetryAfter() {
        for value in ["", "-1", "1.5", "+3", "soon", "99999999999999999999", "date:+30s"] {
            #expect(RetryAfterRule.wait(value, responseTime: Self.sent) == nil, "\(value)")
        }
        // A date with nothing to measure it from.
        #expect(RetryAfterRule.wait("Sun, 06 Nov 1994 08:49:37 GMT", responseTime: nil) == nil)
    }
}
