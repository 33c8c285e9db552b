import Foundation
import HTTPTypes
import Testing

@testable import DownloadEngine

/// The one request policy both loops follow (single-stream and segments): header fields, redirects, retries and
/// what a response means, as pure decisions over plain values.
@Suite("Request policy: rules")
struct RequestPolicyTests {
    private func policy(
        _ adjust: (inout DownloadConfiguration) -> Void = { _ in }, request: [(name: String, value: String)] = []
    ) -> RequestPolicy {
        var configuration = DownloadConfiguration()
        adjust(&configuration)
        return RequestPolicy(configuration, requestHeaders: request)
    }

    private func names(_ fields: [(name: String, value: String)]) -> [String] { fields.map(\.name) }

    private func value(_ name: String, in fields: [(name: String, value: String)]) -> String? {
        fields.first { $0.name == name }?.value
    }

    @Test("every kind of request gets its range fields, in one order, after identity and the digest request")
    func headersPerPlan() {
        let route = Route(original: "http://a.test/f")
        let full = policy().headers(for: .full, route: route)
        #expect(names(full) == ["Accept-Encoding", "Want-Repr-Digest"])
        let resume = policy().headers(for: .resume(offset: 10, ifRange: "\"e\""), route: route)
        #expect(names(resume) == ["Accept-Encoding", "Want-Repr-Digest", "Range", "If-Range"])
        #expect(value("Range", in: resume) == "bytes=10-" && value("If-Range", in: resume) == "\"e\"")
        let segment = policy().headers(for: .resume(offset: 10, ifRange: "\"e\""), end: 20, route: route)
        #expect(value("Range", in: segment) == "bytes=10-19" && value("If-Range", in: segment) == "\"e\"")
        let probe = policy().headers(for: .probe(length: 65536), route: route)
        #expect(names(probe) == ["Accept-Encoding", "Want-Repr-Digest", "Range"])
        #expect(value("Range", in: probe) == "bytes=0-65535")
        let lengthOnly = policy { $0.verification = .lengthOnly }.headers(for: .full, route: route)
        #expect(names(lengthOnly) == ["Accept-Encoding"])
    }

    @Test("a revalidation asks If-None-Match, else If-Modified-Since, before the user's fields")
    func revalidation() {
        let route = Route(original: "http://a.test/f")
        let both = ResumePlanner.Validators(etag: "W/\"x\"", lastModified: "Sat, 02 Jan 2021 00:00:00 GMT")
        let fields = policy(request: [("X-A", "1")]).headers(for: .full, revalidating: both, route: route)
        #expect(names(fields) == ["Accept-Encoding", "Want-Repr-Digest", "If-None-Match", "X-A"])
        let dated = ResumePlanner.Validators(lastModified: "Sat, 02 Jan 2021 00:00:00 GMT")
        #expect(value("If-Modified-Since", in: policy().headers(for: .full, revalidating: dated, route: route)) != nil)
    }

    @Test("credentials go to the origin only; a route that left it stays without them, even back home")
    func credentialsAcrossOrigins() throws {
        let fields: [(name: String, value: String)] = [("Authorization", "Basic x"), ("X-Keep", "k")]
        let policy = policy({ $0.headers = [.cookie: "c"] }, request: fields)
        var route = Route(original: "http://a.test/f")
        #expect(names(policy.userHeaders(route: route)) == ["Cookie", "Authorization", "X-Keep"])
        _ = try route.follow("/g", status: 302, maximumHops: 5)
        #expect(!route.crossOrigin && policy.userHeaders(route: route).count == 3)
        _ = try route.follow("http://b.test/g", status: 302, maximumHops: 5)
        #expect(route.crossOrigin && names(policy.userHeaders(route: route)) == ["X-Keep"])
        _ = try route.follow("http://a.test/h", status: 302, maximumHops: 5)
        #expect(route.crossOrigin && names(policy.userHeaders(route: route)) == ["X-Keep"])
        // A segment connection of such a transfer starts at the original URL and still counts as cross-origin.
        let segment = Route(original: "http://a.test/f", crossOrigin: route.crossOrigin)
        #expect(names(policy.userHeaders(route: segment)) == ["X-Keep"])
        // A resolved URL on another origin from an earlier run: cross-origin from the start, until it is given up.
        var resumed = Route(original: "http://a.test/f", at: "https://a.test/f")
        #expect(resumed.crossOrigin && resumed.usesResolvedURL)
        resumed.restart()
        #expect(!resumed.crossOrigin && !resumed.usesResolvedURL && resumed.hops == 0)
    }

    @Test("after a digest mismatch every request asks caches not to answer, unless the user set those fields")
    func bypassingCaches() {
        var policy = policy(request: [("Pragma", "x")])
        let route = Route(original: "http://a.test/f")
        #expect(value("Cache-Control", in: policy.userHeaders(route: route)) == nil)
        policy.bypassesCaches = true
        let fields = policy.userHeaders(route: route)
        #expect(value("Cache-Control", in: fields) == "no-cache" && value("Pragma", in: fields) == "x")
    }

    @Test("redirects are counted from the route's start and capped; a Location of another scheme is refused")
    func redirects() throws {
        var route = Route(original: "http://a.test/f")
        let hop = try route.follow("/g?x=1", status: 301, maximumHops: 2)
        #expect(hop == RedirectHop(from: "http://a.test/f", to: "http://a.test/g?x=1", status: 301))
        _ = try route.follow("/h", status: 302, maximumHops: 2)
        #expect(throws: DownloadError.tooManyRedirects(2, url: "http://a.test/f")) {
            var third = route
            _ = try third.follow("/i", status: 302, maximumHops: 2)
        }
        var other = Route(original: "http://a.test/f")
        #expect(throws: DownloadError.unsupportedScheme("ftp://a.test/f")) {
            _ = try other.follow("ftp://a.test/f", status: 302, maximumHops: 5)
        }
        #expect(other.hops == 1 && other.url == "http://a.test/f")
    }

    @Test("a redirect target that cannot be connected to sends the route back to the original URL")
    func unreachableTarget() throws {
        var route = Route(original: "http://a.test/f")
        let atOriginal = route.forgetUnreachable(after: .connectFailed("a.test:80", "refused"))
        #expect(!atOriginal)
        _ = try route.follow("http://edge.test/f", status: 302, maximumHops: 5)
        let afterReset = route.forgetUnreachable(after: .network("reset"))
        #expect(!afterReset && route.url == "http://edge.test/f")
        let afterRefusal = route.forgetUnreachable(after: .connectFailed("edge.test:80", "refused"))
        #expect(afterRefusal)
        #expect(route.url == "http://a.test/f" && route.hops == 0)
    }

    @Test("a response's meaning: redirects and re-resolving update the route; retryable statuses carry Retry-After")
    func meanings() throws {
        let policy = policy()
        let validators = ResumePlanner.Validators(etag: "\"e\"", totalLength: 100)
        let plan = ResumePlanner.Request.resume(offset: 10, ifRange: "\"e\"")
        let now = Date()
        var route = Route(original: "http://a.test/f")
        let redirect = try policy.meaning(
            of: .init(status: 307, location: "http://b.test/f"), asked: plan, validators: validators, route: &route,
            now: now)
        #expect(redirect == .askAgain(RedirectHop(from: "http://a.test/f", to: "http://b.test/f", status: 307)))
        #expect(route.url == "http://b.test/f")
        let gone = try policy.meaning(
            of: .init(status: 404), asked: plan, validators: validators, route: &route, now: now)
        #expect(gone == .askAgain(nil) && route.url == "http://a.test/f")
        #expect(throws: DownloadError.permanentHTTPStatus(404, url: "http://a.test/f")) {
            var original = route
            _ = try policy.meaning(
                of: .init(status: 404), asked: plan, validators: validators, route: &original, now: now)
        }
        let busy = try policy.meaning(
            of: .init(status: 503, retryAfter: "7"), asked: plan, validators: validators, route: &route, now: now)
        #expect(busy == .failure(.retryableHTTPStatus(503, url: "http://a.test/f"), retryAfter: .seconds(7)))
        let append = try policy.meaning(
            of: .init(status: 206, contentRange: "bytes 10-99/100", etag: "\"e\""), asked: plan,
            validators: validators, route: &route, now: now)
        #expect(append == .append(total: 100))
        let changed = try policy.meaning(
            of: .init(status: 206, contentRange: "bytes 10-99/100", etag: "\"other\""), asked: plan,
            validators: validators, route: &route, now: now)
        #expect(changed == .restart(.validatorChanged))
    }

    @Test("retries: backoff until the budget is spent, counted again after progress, Retry-After honoured")
    func retriesAlone() {
        let budget = DownloadConfiguration.RetryPolicy(
            maximumRetries: 2, initialDelay: .milliseconds(100), maximumDelay: .seconds(1), jitter: false)
        var retries = Retries()
        let error = DownloadError.network("reset")
        func step(_ progressed: Bool = false, after: Duration? = nil) -> Retries.Step {
            retries.step(
                after: error, retryAfter: after, progressed: progressed, sharing: .alone, policy: budget, random: 0)
        }
        #expect(step() == .retry(after: .milliseconds(100)))
        #expect(step(after: .seconds(3)) == .retry(after: .seconds(3)))
        #expect(step() == .giveUp(.retriesExhausted(2, last: error)))
        #expect(step(true) == .retry(after: .milliseconds(100)))
        var never = Retries()
        #expect(
            never.step(after: error, retryAfter: nil, progressed: false, sharing: .alone, policy: .never, random: 0)
                == .giveUp(error))
    }

    @Test("retries: a slow abort resumes at once, uncounted; three malformed answers in a row without a byte fail")
    func slowAndMalformed() {
        let budget = DownloadConfiguration.RetryPolicy(maximumRetries: 10, jitter: false)
        var retries = Retries()
        let slow = DownloadError.slowTransfer(bytesPerSecond: 100, seconds: 1)
        for _ in 0..<20 {
            #expect(
                retries.step(
                    after: slow, retryAfter: nil, progressed: false, sharing: .alone, policy: budget, random: 0)
                    == .resumeNow)
        }
        #expect(retries.failures == 0)
        let malformed = DownloadError.malformedResponse("bad head")
        func step(_ progressed: Bool) -> Retries.Step {
            retries.step(
                after: malformed, retryAfter: nil, progressed: progressed, sharing: .alone, policy: budget, random: 0)
        }
        #expect(step(false).isRetry)
        #expect(step(true).isRetry)
        #expect(step(false).isRetry)
        #expect(step(false).isRetry)
        #expect(step(false) == .giveUp(.unexpectedResponse("\(malformed.message) (3 times in a row)")))
    }

    @Test("segments: a connection cap or a spent budget makes a connection leave; the last one hands up")
    func retriesShared() {
        let budget = DownloadConfiguration.RetryPolicy(maximumRetries: 1, jitter: false)
        var retries = Retries()
        let capped = DownloadError.retryableHTTPStatus(503, url: "http://a.test/f")
        #expect(
            retries.step(
                after: capped, retryAfter: nil, progressed: false, sharing: .withOthers, policy: budget, random: 0)
                == .leave)
        #expect(
            retries.step(after: capped, retryAfter: nil, progressed: false, sharing: .last, policy: budget, random: 0)
                == .handUp)
        let reset = DownloadError.network("reset")
        #expect(
            retries.step(
                after: reset, retryAfter: nil, progressed: false, sharing: .withOthers, policy: budget, random: 0
            )
            .isRetry)
        #expect(
            retries.step(
                after: reset, retryAfter: nil, progressed: false, sharing: .withOthers, policy: budget, random: 0)
                == .leave)
    }

    @Test("the overall deadline counts the wait before a retry")
    func deadline() {
        let policy = policy { $0.timeouts.overall = .seconds(10) }
        #expect(policy.deadlineError(elapsed: .seconds(9)) == nil)
        #expect(policy.deadlineError(elapsed: .seconds(9), waiting: .seconds(2)) == .deadlineExceeded(10))
        #expect(self.policy().deadlineError(elapsed: .seconds(1_000_000)) == nil)
    }
}

extension Retries.Step {
    fileprivate var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
}
