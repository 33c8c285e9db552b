import Foundation

/// How many times longer than usual the tests wait before they call something lost: `RANGE_TEST_TIME_SCALE`,
/// default 1 (never below). `scripts/sanitize` raises it because instrumented code runs several times slower
/// (10 under ThreadSanitizer, 4 under AddressSanitizer).
///
/// It stretches deadlines only: how long a test waits for a child to exit, a response to arrive, a journal entry to
/// appear. Never a fault's own timing (`stall-for=1s`, a 0.3 s connect timeout under test) and never a speed a test
/// asserts, so no test's meaning changes.
public let testTimeScale: Double =
    ProcessInfo.processInfo.environment["RANGE_TEST_TIME_SCALE"].flatMap(Double.init).map { max($0, 1) } ?? 1

/// `duration` stretched by `testTimeScale`: a deadline, or a timeout whose order before another event the test
/// relies on.
public func scaled(_ duration: Duration) -> Duration { duration * testTimeScale }

/// A deadline of `seconds` whole seconds stretched by `testTimeScale`, rounded up: for socket timeouts and other
/// APIs that count whole seconds.
public func scaled(seconds: Int) -> Int { Int((Double(seconds) * testTimeScale).rounded(.up)) }

/// A deadline of `seconds` stretched by `testTimeScale`, for APIs that count seconds as a `Double`.
public func scaled(seconds: Double) -> Double { seconds * testTimeScale }

/// A `rate=` value of `kibibytesPerSecond` slowed by `testTimeScale`, so a test that must act in the middle of a paced
/// download still finds it running when instrumented code reacts slowly.
public func paced(_ kibibytesPerSecond: Int) -> String { "\(max(1, Int(Double(kibibytesPerSecond) / testTimeScale)))K" }
