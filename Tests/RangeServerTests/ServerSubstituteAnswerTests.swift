import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// The faults that answer with something else than the file or relabel it: `html-page`, `content-type`,
/// `content-disposition` and `reject-header`, over plain HTTP and TLS, in a query and in a scenario step, read with
/// raw clients.
@Suite("Substitute answers and header values")
struct ServerSubstituteAnswerTests: TLSWireSuite {
    /// The one-line body of a 400 for `target`, checked to name `named`.
    private func refusal(
        _ server: RangeServer, _ target: String, naming named: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws {
        let response = try await FaultWire.get(server, target)
        #expect(response.status == 400, "\(target)", sourceLocation: sourceLocation)
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(body.contains(named), "\(body)", sourceLocation: sourceLocation)
        #expect(body.split(separator: "\n").count == 1, "\(body)", sourceLocation: sourceLocation)
    }

    // MARK: - html-page=1

    @Test("html-page: a 200 with a short HTML page instead of the file, whatever Range asks, over http and https")
    func htmlPage() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=41&html-page=1"
            let page = Array(Router.signInPage.utf8)
            let plain = try await FaultWire.get(server, target)
            #expect(plain.status == 200)
            #expect(plain.header("content-type") == "text/html; charset=utf-8")
            #expect(plain.header("content-length") == String(page.count))
            #expect(plain.body == page)
            #expect(plain.header("etag") == nil && plain.header("last-modified") == nil)
            #expect(plain.header("accept-ranges") == nil)
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=0-9"])
            #expect(secure.status == 200)
            #expect(secure.headers["content-type"] == "text/html; charset=utf-8")
            #expect(secure.body == page)
            // A resume, a conditional GET and a HEAD get the page too.
            let ranged = try await FaultWire.get(server, target, headers: ["Range": "bytes=100-"])
            #expect(ranged.status == 200 && ranged.header("content-range") == nil && ranged.body == page)
            let conditional = try await FaultWire.get(server, target, headers: ["If-None-Match": "*"])
            #expect(conditional.status == 200 && conditional.body == page)
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.status == 200 && head.header("content-type") == "text/html; charset=utf-8")
            #expect(head.header("content-length") == String(page.count) && head.body.isEmpty)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 5)
            #expect(entries.allSatisfy { $0.status == 200 && $0.faults == ["html-page=1"] })
        }
    }

    @Test("html-page with body faults and a content-type: the page is cut, and labelled as the query says")
    func htmlPageWithOthers() async throws {
        try await withRangeServer(configuration()) { server in
            let cut = try await FaultWire.get(server, "/bytes/64K?html-page=1&drop-after=10")
            #expect(cut.status == 200)
            #expect(cut.body == Array(Router.signInPage.utf8.prefix(10)))
            #expect(cut.ending == .closed)
            let relabelled = try await FaultWire.get(
                server, "/bytes/64K?html-page=1&content-type=application/octet-stream")
            #expect(relabelled.header("content-type") == "application/octet-stream")
            #expect(relabelled.body == Array(Router.signInPage.utf8))
        }
    }

    @Test("html-page in a scenario step: the first attempt gets the page, the next one the file")
    func htmlPageInAStep() async throws {
        let scenario = """
            {
              "description": "A sign-in page where the file should be, once.",
              "resource": "/bytes/8K?seed=42",
              "attempts": [ { "html-page": 1 }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["portal.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/portal/run1")
            #expect(first.status == 200 && first.header("content-type") == "text/html; charset=utf-8")
            #expect(first.body == Array(Router.signInPage.utf8))
            let second = try await FaultWire.get(server, "/scenario/portal/run1", headers: ["Range": "bytes=0-9"])
            #expect(second.status == 206 && second.body == FaultWire.expected(seed: 42, count: 10))
        }
    }

    @Test("html-page takes a flag, answered 400 with one line naming it")
    func htmlPageBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            try await refusal(server, "/bytes/1K?html-page=login", naming: "html-page=login: expected 1, true")
        }
    }

    // MARK: - content-type=VALUE

    @Test("content-type: every answer carries the value, percent-decoded, instead of its own, over http and https")
    func contentType() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=43&content-type=application%2Fx-test%3B%20charset%3Dx"
            let value = "application/x-test; charset=x"
            let plain = try await FaultWire.get(server, target)
            #expect(plain.status == 200 && plain.header("content-type") == value)
            #expect(plain.headers.filter { $0.name.lowercased() == "content-type" }.count == 1)
            #expect(plain.body == FaultWire.expected(seed: 43, count: 65536))
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=0-9"])
            #expect(secure.status == 206 && secure.headers["content-type"] == value)
            #expect(secure.body == FaultWire.expected(seed: 43, count: 10))
            let tag = try #require(plain.header("etag"))
            let notModified = try await FaultWire.get(server, target, headers: ["If-None-Match": tag])
            #expect(notModified.status == 304 && notModified.header("content-type") == value)
            let unsatisfiable = try await FaultWire.get(server, target, headers: ["Range": "bytes=70000-"])
            #expect(unsatisfiable.status == 416 && unsatisfiable.header("content-type") == value)
            // A multipart answer loses its boundary: that is the fault.
            let several = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-0,10-19"])
            #expect(several.status == 206 && several.header("content-type") == value)
            let status = try await FaultWire.get(server, "/bytes/64K?status=503&content-type=text/html")
            #expect(status.status == 503 && status.header("content-type") == "text/html")
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 5)
            #expect(entries.allSatisfy { $0.faults == ["content-type=application/x-test;%20charset=x"] })
        }
    }

    @Test("content-type in a scenario step is the JSON string as written, for that attempt only")
    func contentTypeInAStep() async throws {
        let scenario = """
            {
              "description": "The first answer says it is HTML.",
              "resource": "/bytes/8K?seed=44",
              "attempts": [ { "content-type": "text/html; charset=%75tf-8" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["relabelled.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/relabelled/run1")
            #expect(first.header("content-type") == "text/html; charset=%75tf-8")
            let second = try await FaultWire.get(server, "/scenario/relabelled/run1")
            #expect(second.header("content-type") == "application/octet-stream")
        }
    }

    @Test("content-type and content-disposition refuse CR, LF and other control characters with one line")
    func headerValuesRefused() async throws {
        try await withRangeServer(configuration()) { server in
            for key in ["content-type", "content-disposition"] {
                for value in ["text%0D%0AX-Evil:%201", "a%0Ab", "a%09b", "a%00b", "a%7Fb", "a%C2%85b", "%20a", ""] {
                    try await refusal(server, "/bytes/1K?\(key)=\(value)", naming: "\(key)=")
                }
                try await refusal(
                    server, "/bytes/1K?\(key)=" + String(repeating: "a", count: 257), naming: "expected a header value")
            }
        }
    }

    @Test("a scenario step whose header value holds a CR or LF is refused, naming the key")
    func headerValueRefusedInAStep() throws {
        let json = """
            { "description": "x", "resource": "/bytes/1K",
              "attempts": [ { "content-disposition": "attachment\\r\\nSet-Cookie: a=b" } ] }
            """
        let error = #expect(throws: RangeServerError.self) {
            try Scenario.parse(Array(json.utf8), name: "bad", source: "bad.json")
        }
        let message = error?.message ?? ""
        #expect(message.hasPrefix("bad.json:"), "\(message)")
        #expect(message.contains("content-disposition=attachment?Set-Cookie: a=b: expected a header value"))
        #expect(!message.contains("\n") && !message.contains("\r"))
    }

    // MARK: - content-disposition=VALUE

    @Test("content-disposition: every answer carries the value, percent-decoded, over http and https")
    func contentDisposition() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=45&content-disposition=attachment%3B%20filename%3D%22report+2026.pdf%22"
            let value = "attachment; filename=\"report 2026.pdf\""
            let plain = try await FaultWire.get(server, target)
            #expect(plain.status == 200 && plain.header("content-disposition") == value)
            #expect(plain.header("content-type") == "application/octet-stream")
            let secure = try await tlsGet(server, target, headers: ["Range": "bytes=0-9"])
            #expect(secure.status == 206 && secure.headers["content-disposition"] == value)
            #expect(secure.body == FaultWire.expected(seed: 45, count: 10))
            let head = try await FaultWire.get(server, target, method: "HEAD")
            #expect(head.header("content-disposition") == value)
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.count == 3)
            let name = "content-disposition=attachment;%20filename=%22report%202026.pdf%22"
            #expect(entries.allSatisfy { $0.faults == [name] })
            // The journal's name is a query that gives the same value back.
            let again = try await FaultWire.get(server, "/bytes/1K?" + name)
            #expect(again.header("content-disposition") == value)
        }
    }

    @Test("content-disposition in scenario steps: the file name changes between attempts")
    func contentDispositionInSteps() async throws {
        let scenario = """
            {
              "description": "The name changes between attempts.",
              "resource": "/bytes/8K?seed=46",
              "attempts": [
                { "content-disposition": "attachment; filename=\\"build-41.zip\\"" },
                { "content-disposition": "attachment; filename*=UTF-8''na%C3%AFve.zip" }
              ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["renamed.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/renamed/run1")
            #expect(first.header("content-disposition") == "attachment; filename=\"build-41.zip\"")
            let second = try await FaultWire.get(server, "/scenario/renamed/run1", headers: ["Range": "bytes=100-"])
            #expect(second.status == 206)
            #expect(second.header("content-disposition") == "attachment; filename*=UTF-8''na%C3%AFve.zip")
        }
    }

    // MARK: - reject-header=NAME

    @Test("reject-header: a request with the field gets 400 and one line, journaled; one without is served")
    func rejectHeader() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/64K?seed=47&reject-header=Authorization"
            let refused = try await FaultWire.get(server, target, headers: ["Authorization": "Bearer x"])
            #expect(refused.status == 400)
            let line = String(decoding: refused.body, as: UTF8.self)
            #expect(line.contains("reject-header=authorization") && line.contains("carries authorization"), "\(line)")
            #expect(line.split(separator: "\n").count == 1)
            // Any case of the name.
            let lower = try await FaultWire.get(server, target, headers: ["authorization": "AWS4-HMAC-SHA256 x"])
            #expect(lower.status == 400)
            let secure = try await tlsGet(server, target, headers: ["Authorization": "Bearer x"])
            #expect(secure.status == 400)
            #expect(String(decoding: secure.body, as: UTF8.self).contains("reject-header=authorization"))
            let served = try await FaultWire.get(server, target, headers: ["Range": "bytes=0-9"])
            #expect(served.status == 206 && served.body == FaultWire.expected(seed: 47, count: 10))
            let entries = try await FaultWire.entries(server, target: target)
            #expect(entries.map(\.status).sorted() == [206, 400, 400, 400])
            #expect(entries.allSatisfy { $0.faults == ["reject-header=authorization"] })
        }
    }

    @Test("reject-header comes before status: with the field 400, without it the status")
    func rejectHeaderBeforeStatus() async throws {
        try await withRangeServer(configuration()) { server in
            let target = "/bytes/1K?status=503&reject-header=x-forwarded-auth"
            let refused = try await FaultWire.get(server, target, headers: ["X-Forwarded-Auth": "1"])
            #expect(refused.status == 400)
            let other = try await FaultWire.get(server, target)
            #expect(other.status == 503)
        }
    }

    @Test("reject-header on a presigned route a scenario redirects to: the forwarded Authorization is refused")
    func rejectHeaderBehindARedirect() async throws {
        let scenario = """
            {
              "description": "The URL redirects to presigned storage, which refuses an Authorization.",
              "resource": "/bytes/8K?seed=48",
              "attempts": [ { "redirect": "signed" } ],
              "routes": { "signed": { "attempts": [ { "reject-header": "Authorization" } ] } }
            }
            """
        try await withRangeServer(configuration(scenarios: ["presigned.json": scenario])) { server in
            let credentials = ["Authorization": "Bearer secret"]
            let redirect = try await FaultWire.get(server, "/scenario/presigned/run1", headers: credentials)
            #expect(redirect.status == 302)
            let location = try #require(redirect.header("location"))
            let forwarded = try await FaultWire.get(server, location, headers: credentials)
            #expect(forwarded.status == 400)
            let dropped = try await FaultWire.get(server, location)
            #expect(dropped.status == 200 && dropped.body == FaultWire.expected(seed: 48, count: 8192))
            let entries = try await FaultWire.entries(server, target: location)
            // In arrival order: the journal lists exchanges as they end, and a loaded machine may end them out of order.
            #expect(entries.sorted { $0.arrival < $1.arrival }.map(\.status) == [400, 200])
            #expect(entries.allSatisfy { $0.faults == ["reject-header=authorization"] })
        }
    }

    @Test("reject-header takes a field name, answered 400 with one line naming it")
    func rejectHeaderBadValue() async throws {
        try await withRangeServer(configuration()) { server in
            for value in ["", "a%20b", "x:y", "a%0D%0Ab", String(repeating: "h", count: 65)] {
                try await refusal(
                    server, "/bytes/1K?reject-header=" + value, naming: "expected a header field name")
            }
        }
    }
}
