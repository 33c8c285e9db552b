import Foundation
import HTTPVocabulary
import Testing

@testable import DownloadEngine

@Suite("Resume planner (pure)")
struct ResumePlannerTests {
    @Test func segmentsNeedProvenRangesAStrongETagAndEnoughLeft() {
        let mebibyte: Int64 = 1 << 20
        let partial = ResumePlanner.ResponseHead(status: 206, etag: "\"v1\"")
        #expect(
            ResumePlanner.allowsSegments(
                partial, total: 8 * mebibyte, held: 0, minimumSegment: mebibyte, acceptRanges: nil))
        // Too little left, no length, a weak ETag.
        #expect(
            !ResumePlanner.allowsSegments(
                partial, total: 8 * mebibyte, held: 7 * mebibyte, minimumSegment: mebibyte, acceptRanges: nil))
        #expect(
            !ResumePlanner.allowsSegments(partial, total: nil, held: 0, minimumSegment: mebibyte, acceptRanges: nil))
        let weak = ResumePlanner.ResponseHead(status: 206, etag: "W/\"v1\"")
        #expect(
            !ResumePlanner.allowsSegments(
                weak, total: 8 * mebibyte, held: 0, minimumSegment: mebibyte, acceptRanges: nil))
        // A 200 only when it announces byte ranges.
        let whole = ResumePlanner.ResponseHead(status: 200, etag: "\"v1\"")
        #expect(
            ResumePlanner.allowsSegments(
                whole, total: 8 * mebibyte, held: 0, minimumSegment: mebibyte, acceptRanges: "none, Bytes"))
        #expect(
            !ResumePlanner.allowsSegments(
                whole, total: 8 * mebibyte, held: 0, minimumSegment: mebibyte, acceptRanges: nil))
    }

    @Test func redirectTargetsResolveAgainstTheRequestURL() throws {
        #expect(try ResumePlanner.redirectTarget("/b?x=1", from: "http://h:8/a", status: 302) == "http://h:8/b?x=1")
        #expect(try ResumePlanner.redirectTarget("https://o/c", from: "http://h/a", status: 301) == "https://o/c")
        #expect(throws: DownloadError.self) {
            try ResumePlanner.redirectTarget("ftp://o/c", from: "http://h/a", status: 302)
        }
    }

    typealias V = ResumePlanner.Validators
    typealias Head = ResumePlanner.ResponseHead
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func decide(
        _ head: Head, offset: Int64, _ validators: V = V(etag: "\"e1\"", lastModified: nil, totalLength: 1000),
        resolved: Bool = false
    ) -> ResumePlanner.Decision {
        let request = ResumePlanner.request(offset: offset, validators: validators)
        return ResumePlanner.decide(
            head, request: request, validators: validators, url: "http://h/x", usingResolvedURL: resolved, now: now)
    }

    @Test func requestUsesStrongETagThenLastModifiedNeverWeak() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(ResumePlanner.request(offset: 0, validators: V(etag: "\"a\"")) == .full)
        #expect(
            ResumePlanner.request(offset: 10, validators: V(etag: "\"a\"")) == .resume(offset: 10, ifRange: "\"a\""))
        #expect(
            ResumePlanner.request(offset: 10, validators: V(etag: "W/\"a\"", lastModified: date))
                == .resume(offset: 10, ifRange: date))
        #expect(
            ResumePlanner.request(offset: 10, validators: V(etag: nil, lastModified: date))
                == .resume(offset: 10, ifRange: date))
        #expect(ResumePlanner.request(offset: 10, validators: V(etag: "W/\"a\"")) == .full)
        #expect(ResumePlanner.request(offset: 10, validators: V()) == .full)
    }

    @Test("an HTML page sent with 200 where a file of another type was being resumed is refused, the bytes kept")
    func htmlPageInPlaceOfTheFileIsRefused() {
        let file = V(etag: "\"e1\"", totalLength: 1000, contentType: "application/octet-stream")
        let page = Head(status: 200, contentLength: "120", contentType: "text/html; charset=UTF-8")
        guard case .refuse(let error) = decide(page, offset: 100, file) else {
            Issue.record("an HTML page replaced a partial application/octet-stream")
            return
        }
        #expect(error.description.contains("HTML page"), "\(error)")
        #expect(error.description.contains("application/octet-stream"), "\(error)")
        // A new version of the same type, an HTML file being downloaded, a fresh download and a record without a
        // type are a 200 like any other.
        let newVersion = Head(status: 200, contentLength: "900", contentType: "Application/Octet-Stream")
        #expect(decide(newVersion, offset: 100, file) == .restartWithBody(total: 900))
        let htmlFile = V(etag: "\"e1\"", totalLength: 1000, contentType: "text/html")
        #expect(decide(page, offset: 100, htmlFile) == .restartWithBody(total: 120))
        #expect(decide(page, offset: 0, file) == .restartWithBody(total: 120))
        #expect(decide(page, offset: 100, V(etag: "\"e1\"", totalLength: 1000)) == .restartWithBody(total: 120))
        #expect(ResumePlanner.isPageInPlaceOfFile("application/xhtml+xml", recorded: "video/mp4"))
        #expect(!ResumePlanner.isPageInPlaceOfFile("text/plain", recorded: "video/mp4"))
        #expect(!ResumePlanner.isPageInPlaceOfFile("text/html", recorded: ""))
    }

    @Test func partialContentContinuesAtTheOffset() {
        let head = Head(status: 206, contentRange: "bytes 100-999/1000", etag: "\"e1\"")
        #expect(decide(head, offset: 100) == .append(total: 1000))
    }

    @Test func truthfulEarlierStartSkipsTheOverlap() {
        let head = Head(status: 206, contentRange: "bytes 50-999/1000", etag: "\"e1\"")
        #expect(decide(head, offset: 100) == .skipOverlap(50, total: 1000))
        let short = Head(status: 206, contentRange: "bytes 0-49/1000", etag: "\"e1\"")
        #expect(decide(short, offset: 100) == .restart(.rangeStartsLate))
    }

    @Test func lateStartLengthOrETagChangeRestarts() {
        #expect(
            decide(Head(status: 206, contentRange: "bytes 200-999/1000", etag: "\"e1\""), offset: 100)
                == .restart(.rangeStartsLate))
        #expect(
            decide(Head(status: 206, contentRange: "bytes 100-1999/2000", etag: "\"e1\""), offset: 100)
                == .restart(.lengthChanged))
        #expect(
            decide(Head(status: 206, contentRange: "bytes 100-999/1000", etag: "\"e2\""), offset: 100)
                == .restart(.validatorChanged))
        #expect(
            decide(Head(status: 206, contentRange: "bytes 100-999/1000", etag: "W/\"e1\""), offset: 100)
                == .restart(.validatorChanged))
        let dated = V(etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT", totalLength: 1000)
        #expect(
            decide(
                Head(status: 206, contentRange: "bytes 100-999/1000", lastModified: "Mon, 07 Nov 1994 08:49:37 GMT"),
                offset: 100, dated) == .restart(.validatorChanged))
        #expect(
            decide(Head(status: 206, contentRange: "bytes 100-999/*"), offset: 100, dated) == .append(total: nil))
    }

    @Test(arguments: ["", "bytes", "bytes 5-1/10", "bytes 1-10/10", "items 0-1/2", "bytes a-b/c", "bytes */*"])
    func malformedContentRangeRestarts(_ value: String) {
        #expect(decide(Head(status: 206, contentRange: value), offset: 100) == .restart(.malformedContentRange))
    }

    @Test func anEncodedBodyIsNeverWrittenAsTheFile() {
        for status in [200, 206] {
            for coding in ["gzip", "br", "identity, gzip", "GZIP"] {
                let head = Head(
                    status: status, contentRange: status == 206 ? "bytes 100-999/1000" : nil, etag: "\"e1\"",
                    contentEncoding: coding)
                guard case .fail(let error) = decide(head, offset: status == 206 ? 100 : 0) else {
                    Issue.record("\(status) with Content-Encoding \(coding) was not refused")
                    continue
                }
                #expect(error.message.contains("Content-Encoding: \(coding)"))
            }
        }
        // identity, said outright or not at all, is the file's bytes.
        let identity = Head(
            status: 206, contentRange: "bytes 100-999/1000", etag: "\"e1\"", contentEncoding: "identity")
        #expect(decide(identity, offset: 100) == .append(total: 1000))
        #expect(decide(Head(status: 200, contentEncoding: ""), offset: 0, V()) == .restartWithBody(total: nil))
        // A 304 or a redirect carries no body to write; the field does not matter there.
        #expect(
            decide(Head(status: 302, location: "/x", contentEncoding: "gzip"), offset: 0) == .redirect(location: "/x"))
    }

    @Test func fullResponseToARangeRequestRestartsKeepingTheBody() {
        #expect(decide(Head(status: 200, contentLength: "1000"), offset: 100) == .restartWithBody(total: 1000))
        #expect(decide(Head(status: 200), offset: 0, V()) == .restartWithBody(total: nil))
    }

    @Test func unsatisfiableWithACompletePartialFinishes() {
        #expect(decide(Head(status: 416, contentRange: "bytes */1000"), offset: 1000) == .finish)
        #expect(decide(Head(status: 416, contentRange: "bytes */2000"), offset: 1000) == .restart(.unsatisfiable))
        #expect(decide(Head(status: 416), offset: 1000) == .restart(.unsatisfiable))
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func redirectsAreReturnedToTheShell(_ status: Int) {
        #expect(decide(Head(status: status, location: "/next"), offset: 0) == .redirect(location: "/next"))
        #expect(decide(Head(status: status), offset: 0) == .fail(.redirectWithoutLocation(status, url: "http://h/x")))
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func retryableStatusesRetry(_ status: Int) {
        #expect(decide(Head(status: status), offset: 10) == .retry(after: nil))
        #expect(decide(Head(status: status, retryAfter: "7"), offset: 10) == .retry(after: .seconds(7)))
        #expect(
            decide(Head(status: status, retryAfter: "Tue, 14 Nov 2023 22:13:30 GMT"), offset: 10)
                == .retry(after: .seconds(10)))
    }

    @Test(arguments: [400, 401, 403, 404, 405, 410, 451, 501, 505, 300, 305])
    func otherStatusesFailAtOnce(_ status: Int) {
        #expect(decide(Head(status: status), offset: 10) == .fail(.permanentHTTPStatus(status, url: "http://h/x")))
    }

    @Test(arguments: [401, 403, 404, 410])
    func goneResolvedURLReresolves(_ status: Int) {
        #expect(decide(Head(status: status), offset: 10, resolved: true) == .reresolve)
    }

    /// Every status from 100 to 599 gets the decision of its class, written out here apart from the planner's switch:
    /// a status that fell through to the wrong branch (a 2xx failing as permanent, a 5xx not retried) fails this.
    @Test func everyStatusHasTheDecisionOfItsClass() {
        let retried: Set<Int> = [408, 429, 500, 502, 503, 504]
        let redirects: Set<Int> = [301, 302, 303, 307, 308]
        let gone: Set<Int> = [401, 403, 404, 410]
        let url = "http://h/x"
        for status in 100...599 {
            let head = Head(status: status, contentRange: "bytes 0-9/10", location: "/next")
            let expected: ResumePlanner.Decision
            switch status {
            case 200: expected = .restartWithBody(total: nil)
            case 206: expected = .append(total: 10)
            case 416: expected = .restart(.unsatisfiable)
            case 304, 412: expected = .restart(.preconditionFailed)
            case _ where redirects.contains(status): expected = .redirect(location: "/next")
            case _ where gone.contains(status): expected = .fail(.permanentHTTPStatus(status, url: url))
            case _ where retried.contains(status): expected = .retry(after: nil)
            case 201...299: expected = .fail(.unexpectedResponse("HTTP \(status) from \(url)"))
            default: expected = .fail(.permanentHTTPStatus(status, url: url))
            }
            #expect(decide(head, offset: 0) == expected, "status \(status)")
        }
    }
}

@Suite("Retry policy (pure)")
struct RetryPolicyTests {
    @Test func exponentialWithoutJitter() {
        var policy = DownloadConfiguration.RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(10))
        policy.jitter = false
        #expect(policy.delay(forRetry: 1, random: 0.5) == .seconds(1))
        #expect(policy.delay(forRetry: 2, random: 0.5) == .seconds(2))
        #expect(policy.delay(forRetry: 4, random: 0.5) == .seconds(8))
        #expect(policy.delay(forRetry: 5, random: 0.5) == .seconds(10))
        #expect(policy.delay(forRetry: 10, random: 0.5) == .seconds(10))
        #expect(policy.delay(forRetry: 11, random: 0.5) == nil)
        #expect(policy.delay(forRetry: 0, random: 0.5) == nil)
    }

    @Test func jitterStaysWithinHalfToFull() {
        let policy = DownloadConfiguration.RetryPolicy(initialDelay: .seconds(4), maximumDelay: .seconds(100))
        #expect(policy.delay(forRetry: 1, random: 0) == .seconds(2))
        #expect(policy.delay(forRetry: 1, random: 1) == .seconds(4))
        for _ in 0..<100 {
            let d = policy.delay(forRetry: 3, random: .random(in: 0..<1))!
            #expect(d >= .seconds(8) && d <= .seconds(16))
        }
    }

    @Test func retryAfterWinsAndIsCapped() {
        let policy = DownloadConfiguration.RetryPolicy(maximumRetryAfter: .seconds(60))
        #expect(policy.delay(forRetry: 1, retryAfter: .seconds(5), random: 0.9) == .seconds(5))
        #expect(policy.delay(forRetry: 1, retryAfter: .seconds(3600), random: 0.9) == .seconds(60))
        #expect(policy.delay(forRetry: 11, retryAfter: .seconds(5), random: 0.9) == nil)
        #expect(DownloadConfiguration.RetryPolicy.never.delay(forRetry: 1, random: 0) == nil)
    }

    @Test func retryableStatusesAreExactlyTheDocumentedOnes() {
        let retryable = (100...599).filter { DownloadConfiguration.RetryPolicy.isRetryable(status: $0) }
        #expect(retryable == [408, 429, 500, 502, 503, 504])
    }

    @Test func errorKindsThatRetry() {
        #expect(DownloadError.network("reset").isRetryable)
        #expect(DownloadError.idleTimeout(1).isRetryable)
        #expect(DownloadError.prematureEndOfBody(received: 1, expected: 2).isRetryable)
        #expect(DownloadError.retryableHTTPStatus(503, url: "u").isRetryable)
        #expect(!DownloadError.permanentHTTPStatus(404, url: "u").isRetryable)
        #expect(!DownloadError.verificationFailed("x").isRetryable)
        #expect(!DownloadError.fileSystem("ENOSPC").isRetryable)
    }
}

@Suite("Header values (pure)")
struct HeaderValuesTests {
    @Test func retryAfterDates() {
        let now = Date(timeIntervalSince1970: 784_111_777 + 100)
        #expect(HeaderValues.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
        #expect(HeaderValues.retryAfter("Sun, 06 Nov 1994 08:51:37 GMT", now: now) == .seconds(20))
        #expect(HeaderValues.retryAfter("Sunday, 06-Nov-94 08:51:37 GMT", now: now) == .seconds(20))
        #expect(HeaderValues.retryAfter("Sun Nov  6 08:51:37 1994", now: now) == .seconds(20))
        #expect(HeaderValues.retryAfter(" 7 ", now: now) == .seconds(7))
        #expect(HeaderValues.retryAfter("yesterday", now: now) == nil)
    }

    @Test func reprDigest() {
        // SHA-256 of the empty string.
        let empty = "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        #expect(HeaderValues.sha256FromReprDigest(empty) == hex)
        #expect(HeaderValues.sha256FromReprDigest("sha-512=:AAAA:, " + empty) == hex)
        #expect(HeaderValues.sha256FromReprDigest("sha-256=:AAAA:") == nil)
        #expect(HeaderValues.sha256FromReprDigest("  sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:  ") == hex)
        // Structured-field keys are lower case (RFC 9651 §3.2): an upper-case key makes the whole field invalid.
        #expect(HeaderValues.sha256FromReprDigest("SHA-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:") == nil)
        #expect(HeaderValues.sha256FromReprDigest("sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU:") == nil)
        // Foundation decodes a misplaced '=' to other bytes: a malformed field must count as absent, not as a mismatch.
        #expect(HeaderValues.sha256FromReprDigest("sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuF=U:") == nil)
        #expect(HeaderValues.sha256FromReprDigest("sha-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=") == nil)
        #expect(HeaderValues.sha256FromReprDigest("sha-2567=:AAAA:") == nil)
        #expect(HeaderValues.sha256FromReprDigest("") == nil)
        // Every byte value round-trips through the decoder (32 bytes at a time, as a digest is).
        for offset in stride(from: 0, to: 256, by: 32) {
            let bytes = (0..<32).map { UInt8(offset + $0) }
            let encoded = Data(bytes).base64EncodedString()
            #expect(HeaderValues.sha256FromReprDigest("sha-256=:\(encoded):") == HeaderValues.hex(bytes))
        }
    }

    @Test func origins() {
        let a = URL(string: "http://a.test/x")!
        #expect(HeaderValues.sameOrigin(a, URL(string: "http://A.test:80/y")!))
        #expect(!HeaderValues.sameOrigin(a, URL(string: "http://a.test:8080/y")!))
        #expect(!HeaderValues.sameOrigin(a, URL(string: "https://a.test/y")!))
    }

    @Test func relativePaths() {
        #expect(LexicalPath.relative(from: "/a/b/.rangefetch", to: "/a/b/file") == "../file")
        #expect(LexicalPath.relative(from: "/s", to: "/a/b") == "../a/b")
        #expect(LexicalPath.absolute("../x", relativeTo: "/a/b") == "/a/x")
    }

    @Test(
        "verify: a server digest that disagrees restarts; the user's checksum fails only bytes the server vouches for")
    func verification() {
        let a = String(repeating: "a", count: 64)
        let b = String(repeating: "b", count: 64)
        func verify(
            _ sha: String?, expected: String? = nil, announced: String? = nil, total: Int64? = 10
        )
            -> ResumePlanner.Verdict
        {
            ResumePlanner.verify(length: 10, totalLength: total, sha256: sha, expected: expected, announced: announced)
        }
        #expect(verify(a) == .verified)
        #expect(verify(a, expected: a.uppercased(), announced: a) == .verified)
        #expect(verify(nil, expected: b, announced: b) == .verified)  // nothing hashed (lengthOnly): length only
        #expect(verify(a, announced: b) == .restart(.digestMismatch))
        // Both disagree: the bytes were damaged on the way; the user's checksum is not the reason.
        #expect(verify(a, expected: b, announced: b) == .restart(.digestMismatch))
        guard case .fail(let error) = verify(a, expected: b, announced: a) else {
            Issue.record("a checksum the server's bytes fail must fail the task")
            return
        }
        #expect(DownloadError.verificationFailed ~= error)
        #expect(error.message.contains("expected " + b))
        guard case .fail(let short) = verify(a, total: 11) else {
            Issue.record("a length other than the declared one must fail")
            return
        }
        #expect(short.message == "verification failed: length 10, expected 11")
    }

    @Test("absolute paths: normal ones come back as they are, the others normalised")
    func absolutePaths() {
        for normal in ["/", "/a", "/a/b.bin", "/.hidden/x", "/a/..b", "/a/...", "/a/b./c"] {
            #expect(LexicalPath.absolute(normal) == normal)
        }
        let cases = [
            ("/a//b", "/a/b"), ("/a/./b", "/a/b"), ("/a/../b", "/b"), ("/a/b/", "/a/b"), ("/a/.", "/a"),
            ("/a/..", "/"), ("//", "/"), ("/./a", "/a"),
        ]
        for (path, expected) in cases { #expect(LexicalPath.absolute(path) == expected) }
        let relative = [
            ("x.part", "/a/b", "/a/b/x.part"), ("../f", "/a/b", "/a/f"), ("../../f", "/a/b", "/f"),
            ("../../../f", "/a/b", "/f"), ("../f", "/", "/f"), ("x", "/", "/x"), ("./x", "/a", "/a/x"),
            ("a//b", "/r", "/r/a/b"), ("..", "/a/b", "/a"), ("../x/../y", "/a/b", "/a/y"), ("x", "/a/./b", "/a/b/x"),
        ]
        for (path, base, expected) in relative { #expect(LexicalPath.absolute(path, relativeTo: base) == expected) }
    }
}
