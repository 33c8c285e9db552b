import HTTPVocabulary
import Testing

/// `Proxy-Status` (RFC 9209) as a client reads it: which intermediary met an error.
@Suite("Proxy-Status")
struct ProxyStatusTests {
    @Test("entries in field order with their error; the error is the one nearest the origin")
    func entries() throws {
        let field = try #require(
            ProxyStatus(
                parsing: #"origin-cache; received-status=503, "edge proxy"; error=destination_unavailable; details="x""#
            ))
        #expect(
            field.entries == [
                .init(proxy: "origin-cache"), .init(proxy: "edge proxy", error: "destination_unavailable"),
            ])
        #expect(field.error == "destination_unavailable")
        let two = try #require(ProxyStatus(parsing: "a; error=http_request_denied, b; error=proxy_internal_error"))
        #expect(two.error == "http_request_denied")
    }

    @Test("no error, a non-token error, members that are not names, and invalid fields")
    func oddities() {
        #expect(ProxyStatus(parsing: "cache; received-status=200")?.error == nil)
        #expect(ProxyStatus(parsing: #"cache; error="quoted""#)?.entries == [.init(proxy: "cache")])
        #expect(ProxyStatus(parsing: "1; error=x, cache")?.entries == [.init(proxy: "cache")])
        #expect(ProxyStatus(parsing: "cache;;") == nil)
        #expect(ProxyStatus(parsing: "")?.entries == [])
    }
}
