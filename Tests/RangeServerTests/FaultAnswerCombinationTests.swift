import Testing

@testable import RangeServer

/// The values of the header-text keys and the combinations of the keys that shape a 206 or replace the answer
/// (`content-range`, `multipart`, `unsolicited-206`, `html-page`, `content-type`, `content-disposition`,
/// `reject-header`), on the parser and the scenario loader, without a server.
@Suite("Answer-shaping fault combinations")
struct FaultAnswerCombinationTests {
    /// The one-line message of a refused query, or nil when it parsed.
    private func failure(_ query: String) -> String? {
        do {
            _ = try FaultPlan.parse(query: QueryString.parse(query))
            return nil
        } catch {
            return (error as? RangeServerError)?.message ?? "\(error)"
        }
    }

    @Test(
        "combinations without a single meaning are refused with one line naming both keys",
        arguments: [
            ("content-range=bytes%200-1/2&content-range-total=unknown", "content-range=", "content-range-total"),
            ("content-range=bytes%200-1/2&range-cap=1", "content-range=", "range-cap"),
            ("content-range=bytes%200-1/2&misalign-range=1", "content-range=", "misalign-range"),
            ("multipart=always&content-range=x", "multipart=always", "content-range"),
            ("multipart=always&content-range-total=unknown", "multipart=always", "content-range-total"),
            ("multipart=always&range-cap=1K", "multipart=always", "range-cap"),
            ("html-page=1&status=503", "html-page=1", "status"),
        ]
    )
    func refused(query: String, blamed: String, other: String) throws {
        let message = try #require(failure(query), "\(query) was accepted")
        #expect(message.contains(blamed) && message.contains("cannot be combined with \(other)"), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test("html-page is refused beside every key that shapes the answer it replaces")
    func htmlPageReplaces() throws {
        for key in FaultKey.htmlPageReplaces {
            let query = "html-page=1&\(key.name)=\(key.example)"
            let message = try #require(failure(query), "\(query) was accepted")
            #expect(
                message == "bad query parameters: html-page=1 cannot be combined with \(key.name) "
                    + "(the page replaces the answer it shapes)", "\(message)")
        }
    }

    @Test(
        "combinations with one meaning are accepted",
        arguments: [
            "content-range=bytes%200-1/2&unsolicited-206=1", "multipart=always&unsolicited-206=1",
            "multipart=always&misalign-range=10", "unsolicited-206=1&range-cap=1K&content-range-total=unknown",
            "html-page=1&content-type=application/octet-stream&content-disposition=attachment",
            "html-page=1&drop-after=10&rate=1K&chunked=1", "html-page=1&head=405&reject-header=authorization",
            "reject-header=authorization&status=503", "content-type=text/plain&multipart=always",
        ]
    )
    func accepted(query: String) {
        #expect(failure(query) == nil, "\(failure(query) ?? "")")
    }

    @Test("a scenario step with html-page and status is refused at the line of html-page")
    func refusedInAStep() throws {
        let json = """
            { "description": "x", "resource": "/bytes/1K",
              "attempts": [ { "status": 503,
                "html-page": true } ] }
            """
        let error = #expect(throws: RangeServerError.self) {
            try Scenario.parse(Array(json.utf8), name: "bad", source: "bad.json")
        }
        let message = error?.message ?? ""
        #expect(message.hasPrefix("bad.json:3:"), "\(message)")
        #expect(message.contains("html-page=1 cannot be combined with status"), "\(message)")
    }

    @Test("a header value is 1 to 256 bytes without control characters or spaces at its ends")
    func headerValues() {
        for good in [
            "a", "bytes=0-99/100", "attachment; filename=\"a b\"", "naïve", String(repeating: "x", count: 256),
        ] {
            #expect(HeaderText.value(good) == good)
        }
        for bad in [
            "", " a", "a ", "a\rb", "a\nb", "a\tb", "a\u{0}b", "a\u{7F}b", "a\u{85}b",
            String(repeating: "x", count: 257),
        ] {
            #expect(HeaderText.value(bad) == nil, "\(bad.debugDescription)")
        }
        #expect(HeaderText.name("Authorization") == "authorization")
        #expect(HeaderText.name("x-amz-security-token") == "x-amz-security-token")
        for bad in ["", "a b", "a:b", "a\nb", "é", String(repeating: "h", count: 65)] {
            #expect(HeaderText.name(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test("the printed value parses back through the query decoder, and is a valid URL query component")
    func queryFormRoundTrip() throws {
        for value in [
            "bytes=0-99/100", "attachment; filename=\"a b.pdf\"", "a+b&c=d%41#e", "naïve %C3%AF", "x?y/z:@!$'()*,;",
            "[]{}|\\^`<>",
        ] {
            let printed = HeaderText.queryForm(value)
            #expect(QueryString.decode(Substring(printed)) == value, "\(printed)")
            #expect(printed.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !"\"#&+<>[]\\^`{|}".utf8.contains($0) })
            let plan = try FaultPlan.parse(query: QueryString.parse("content-disposition=" + printed)).plan
            #expect(plan.contentDisposition == value)
            #expect(plan.appliedNames == ["content-disposition=" + printed])
        }
    }
}
