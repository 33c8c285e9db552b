import Foundation
import HTTPTypes
import RangeServer
import Testing

@testable import DownloadEngine

/// Which proxy a URL goes through: the environment's variables as curl reads them, and `no_proxy`.
@Suite("Proxy selection")
struct ProxySelectionTests {
    typealias Proxy = DownloadConfiguration.Proxy

    @Test("proxy URLs parse as curl takes them; other schemes and paths are refused without showing a password")
    func parsing() throws {
        let full = try Proxy.Server(parsing: "http://us%40r:p%3Ass@proxy.example:3128/")
        #expect(full == .init(host: "proxy.example", port: 3128, username: "us@r", password: "p:ss"))
        #expect(full.description == "proxy.example:3128")
        #expect(try Proxy.Server(parsing: "proxy.example") == .init(host: "proxy.example", port: 1080))
        #expect(try Proxy.Server(parsing: "HTTP://[::1]:8080") == .init(host: "::1", port: 8080))
        for bad in ["https://p:1", "socks5://p:1", "http://p:1/path", "http://:1", "http://u:hunter2@p:99999"] {
            do {
                _ = try Proxy.Server(parsing: bad)
                Issue.record("accepted \(bad)")
            } catch let error as DownloadError {
                #expect(error.kind == "invalid-proxy")
                #expect(!error.message.contains("hunter2"), "\(error.message)")
            }
        }
    }

    @Test("environment: lower case first, HTTP_PROXY ignored (httpoxy), all_proxy as the fallback, empty means none")
    func environment() throws {
        let a = try Proxy.Server(parsing: "a:1")
        let b = try Proxy.Server(parsing: "b:2")
        let c = try Proxy.Server(parsing: "c:3")
        #expect(try Proxy.fromEnvironment([:]) == .direct)
        #expect(try Proxy.fromEnvironment(["HTTP_PROXY": "a:1"]) == .direct)
        #expect(try Proxy.fromEnvironment(["http_proxy": "a:1"]) == .init(http: a))
        #expect(try Proxy.fromEnvironment(["HTTPS_PROXY": "b:2"]) == .init(https: b))
        #expect(try Proxy.fromEnvironment(["https_proxy": "a:1", "HTTPS_PROXY": "b:2"]) == .init(https: a))
        #expect(try Proxy.fromEnvironment(["ALL_PROXY": "c:3", "http_proxy": "a:1"]) == .init(http: a, https: c))
        #expect(try Proxy.fromEnvironment(["all_proxy": "c:3", "https_proxy": ""]) == .init(http: c))
        #expect(
            try Proxy.fromEnvironment(["http_proxy": "a:1", "NO_PROXY": "x, .y ,", "no_proxy": "z"])
                == .init(http: a, noProxy: ["z"]))
        #expect(try Proxy.fromEnvironment(["NO_PROXY": "x, .y ,"]).noProxy == ["x", ".y"])
        do {
            _ = try Proxy.fromEnvironment(["https_proxy": "ftp://p"])
            Issue.record("accepted ftp://")
        } catch let error as DownloadError {
            #expect(error.message.hasPrefix("https_proxy: "), "\(error.message)")
        }
    }

    @Test(
        "no_proxy: * matches all; a name matches itself and subdomains, leading dot optional; IPs exactly; ports ignored",
        arguments: [
            ("example.com", "example.com", true), ("example.com", "www.example.com", true),
            (".example.com", "example.com", true), (".example.com", "a.b.example.com", true),
            ("example.com", "notexample.com", false), ("example.com", "example.com.org", false),
            ("EXAMPLE.com", "Example.COM.", true), ("example.com:8080", "example.com", true),
            ("*", "anything", true), ("127.0.0.1", "127.0.0.1", true), ("127.0.0.1", "127.0.0.10", false),
            ("0.0.1", "127.0.0.1", false), ("::1", "[::1]", true), ("[::1]:80", "::1", true),
            ("localhost", "127.0.0.1", false), ("", "example.com", false),
        ])
    func noProxy(entry: String, host: String, bypassed: Bool) {
        #expect(Proxy.bypasses(host: host, noProxy: [entry]) == bypassed)
    }

    @Test("the proxy of a URL: by scheme, none for a no_proxy host")
    func selection() throws {
        let a = try Proxy.Server(parsing: "a:1")
        let b = try Proxy.Server(parsing: "b:2")
        let proxy = Proxy(http: a, https: b, noProxy: ["internal"])
        #expect(proxy.server(for: "http://example.com/x") == a)
        #expect(proxy.server(for: "https://example.com:8443/x") == b)
        #expect(proxy.server(for: "https://files.internal/x") == nil)
        #expect(Proxy(http: a).server(for: "https://example.com/") == nil)
        #expect(Proxy.direct.server(for: "http://example.com/") == nil)
    }
}

/// Downloads through a forward proxy on loopback (``ForwardProxy``), whose record of request heads is the witness.
@Suite("Proxies: engine")
struct ProxyEngineTests {
    func through(_ proxy: ForwardProxy, noProxy: [String] = []) -> DownloadConfiguration {
        testConfiguration {
            $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port), noProxy: noProxy)
        }
    }

    @Test("http:// goes to the proxy in absolute form; drops mid-body resume through it, with Range and If-Range")
    func plainHTTPThroughProxy() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                try await withEngine(on: server, through(proxy)) { server, engine, dir in
                    let target = "/bytes/1M?seed=601&drop-after=300K"
                    let id = try await engine.add(.init(url: server.baseURL + target, destination: dir + "/a"))
                    let result = await engine.result(of: id)
                    #expect(
                        result
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 1 << 20, seed: 601), bytes: 1 << 20))
                    // Every response is dropped after 300 KiB: four requests, each resuming where the last ended.
                    let gets = await settledRequests(server, "/bytes/1M?seed=601").sorted { $0.arrival < $1.arrival }
                    #expect(
                        gets.map { $0.requestHeaders["range"] } == [
                            nil, "bytes=307200-", "bytes=614400-", "bytes=921600-",
                        ])
                    #expect(gets.dropFirst().allSatisfy { $0.requestHeaders["if-range"] != nil })
                    let lines = proxy.requests.map(\.line)
                    #expect(lines == Array(repeating: "GET \(server.baseURL + target) HTTP/1.1", count: 4), "\(lines)")
                    #expect(proxy.requests.allSatisfy { $0.headers["host"] == "127.0.0.1:\(server.port)" })
                    // The proxy cut the client's connection with each drop: a connection per request.
                    #expect(proxy.connections == 4)
                }
            }
        }
    }

    @Test("http:// requests to the proxy share one kept-alive connection, whatever their origin")
    func keepsConnectionsAlive() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                try await withEngine(on: server, through(proxy)) { server, engine, dir in
                    for (index, base) in [server.baseURL, "http://localhost:\(server.port)", server.baseURL]
                        .enumerated()
                    {
                        let id = try await engine.add(
                            .init(url: base + "/bytes/64K?seed=\(610 + index)", destination: dir + "/\(index)"))
                        #expect(
                            await engine.result(of: id)
                                == .completed(
                                    path: dir + "/\(index)",
                                    sha256: expectedSHA256(size: 64 << 10, seed: UInt64(610 + index)),
                                    bytes: 64 << 10))
                    }
                    #expect(proxy.requests.count == 3)
                    #expect(proxy.connections == 1)
                }
            }
        }
    }

    @Test("http:// through a proxy that wants credentials: Proxy-Authorization goes to the proxy, never the origin")
    func credentialsOnAbsoluteForm() async throws {
        try await withForwardProxy(.init(credentials: "Basic dTpw")) { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                let configuration = testConfiguration {
                    $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port, username: "u", password: "p"))
                }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    let id = try await engine.add(
                        .init(url: server.baseURL + "/bytes/256K?seed=605", destination: dir + "/a"))
                    #expect(
                        await engine.result(of: id)
                            == .completed(
                                path: dir + "/a", sha256: expectedSHA256(size: 256 << 10, seed: 605), bytes: 256 << 10))
                    #expect(proxy.requests.map { $0.headers["proxy-authorization"] } == ["Basic dTpw"])
                    let get = try #require(await settledRequests(server, "/bytes/256K?seed=605").first)
                    #expect(get.requestHeaders["proxy-authorization"] == nil)
                }
            }
        }
    }

    @Test("https:// goes through CONNECT to the TLS port, with the proxy's credentials on the CONNECT only")
    func httpsThroughConnect() async throws {
        try await withForwardProxy { proxy in
            try await withTLSEngine(
                tlsServerConfiguration(),
                {
                    $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port, username: "u", password: "p"))
                    $0.headers = [.proxyAuthorization: "Basic bm90LWZvci10aGUtb3JpZ2lu"]
                }
            ) { server, engine, dir in
                let base = try #require(server.tlsBaseURL)
                let port = try #require(server.tlsPort)
                let id = try await engine.add(.init(url: base + "/bytes/256K?seed=602", destination: dir + "/a"))
                let result = await engine.result(of: id)
                #expect(
                    result
                        == .completed(
                            path: dir + "/a", sha256: expectedSHA256(size: 256 << 10, seed: 602), bytes: 256 << 10))
                let request = try #require(proxy.requests.first)
                #expect(request.line == "CONNECT 127.0.0.1:\(port) HTTP/1.1")
                #expect(request.headers["proxy-authorization"] == "Basic dTpw")
                let get = try #require(await settledRequests(server, "/bytes/256K?seed=602").first)
                #expect(get.tls)
                // Inside the tunnel the origin sees no proxy credentials.
                #expect(get.requestHeaders["proxy-authorization"] == nil)
            }
        }
    }

    @Test("a no_proxy host is reached directly, others through the proxy")
    func noProxyBypass() async throws {
        try await withForwardProxy { proxy in
            try await withRangeServer(fixturesServerConfiguration) { server in
                try await withEngine(on: server, through(proxy, noProxy: ["localhost"])) { server, engine, dir in
                    let direct = try await engine.add(
                        .init(url: "http://localhost:\(server.port)/bytes/1K?seed=603", destination: dir + "/a"))
                    #expect(
                        await engine.result(of: direct)
                            == .completed(path: dir + "/a", sha256: expectedSHA256(size: 1024, seed: 603), bytes: 1024))
                    #expect(proxy.requests.isEmpty)
                    let proxied = try await engine.add(
                        .init(url: server.baseURL + "/bytes/1K?seed=604", destination: dir + "/b"))
                    #expect(
                        await engine.result(of: proxied)
                            == .completed(path: dir + "/b", sha256: expectedSHA256(size: 1024, seed: 604), bytes: 1024))
                    #expect(proxy.requests.map(\.line) == ["GET \(server.baseURL)/bytes/1K?seed=604 HTTP/1.1"])
                    #expect(await settledRequests(server, "/bytes/1K?seed=60").count == 2)
                }
            }
        }
    }

    @Test("a proxy that refuses connections fails the task with one line naming the proxy, not the origin")
    func refusedProxy() async throws {
        let configuration = testConfiguration {
            $0.proxy = .init(.init(host: "127.0.0.1", port: 1))
            $0.retry = .init(maximumRetries: 1, initialDelay: .milliseconds(10))
        }
        try await withEngine(configuration) { server, engine, dir in
            let id = try await engine.add(.init(url: server.baseURL + "/bytes/1K", destination: dir + "/a"))
            guard case .failed(let error) = await engine.result(of: id) else {
                Issue.record("did not fail")
                return
            }
            #expect(error.message.contains("proxy 127.0.0.1:1"), "\(error.message)")
            #expect(!error.message.contains(":\(server.port)"), "\(error.message)")
            #expect(!error.message.contains("\n"))
            #expect(requests(server, "/bytes/").isEmpty)
        }
    }

    @Test("a proxy's 502 to CONNECT is the proxy's, named with its status, and retried")
    func deniedTunnel() async throws {
        try await withForwardProxy { proxy in
            let configuration = testConfiguration {
                $0.proxy = .init(.init(host: "127.0.0.1", port: proxy.port))
                $0.retry = .init(maximumRetries: 2, initialDelay: .milliseconds(10))
            }
            try await withEngine(configuration) { _, engine, dir in
                // Port 1 refuses, so the proxy answers 502.
                let id = try await engine.add(.init(url: "https://127.0.0.1:1/x", destination: dir + "/a"))
                guard case .failed(let error) = await engine.result(of: id) else {
                    Issue.record("did not fail")
                    return
                }
                #expect(error.kind == "retries-exhausted")
                #expect(error.status == 502)
                #expect(
                    error.message.hasSuffix("HTTP 502 from proxy 127.0.0.1:\(proxy.port): CONNECT 127.0.0.1:1 refused"),
                    "\(error.message)")
                #expect(proxy.requests.map(\.line) == Array(repeating: "CONNECT 127.0.0.1:1 HTTP/1.1", count: 3))
            }
        }
    }

    @Test(
        "a proxy's own refusal is permanent and named, its mark shown; 502, 503 and 504 are retried",
        arguments: [
            // status, https?, marks, credentials given, expected message tail, retried
            (403, true, [(String, String)](), false, "CONNECT 127.0.0.1:{port} refused", false),
            (
                407, true, [], false,
                "CONNECT 127.0.0.1:{port} refused: it wants credentials (http://USER:PASSWORD@HOST:PORT)", false
            ),
            (
                407, false, [], true, "GET http://127.0.0.1:{port}/x refused: it did not accept the credentials given",
                false
            ),
            (
                403, false, [("X-Squid-Error", "ERR_ACCESS_DENIED 0")], false,
                "GET http://127.0.0.1:{port}/x refused (ERR_ACCESS_DENIED)", false
            ),
            (
                500, false, [("Proxy-Status", "testproxy; error=proxy_internal_error")], false,
                "GET http://127.0.0.1:{port}/x refused (proxy_internal_error)", false
            ),
            (
                503, false, [("Proxy-Status", "testproxy; error=destination_unavailable")], false,
                "GET http://127.0.0.1:{port}/x refused (destination_unavailable)", true
            ),
            (504, true, [], false, "CONNECT 127.0.0.1:{port} refused", true),
        ] as [(Int, Bool, [(String, String)], Bool, String, Bool)])
    func refusals(
        status: Int, https: Bool, marks: [(String, String)], credentials: Bool, tail: String, retried: Bool
    ) async throws {
        var options = ForwardProxy.Options(refusal: status == 407 ? nil : status, marks: marks)
        if status == 407 { options.credentials = "Basic c29tZW9uZTplbHNl" }
        try await withForwardProxy(options) { proxy in
            try await withRangeServer(tlsServerConfiguration()) { server in
                let configuration = testConfiguration {
                    $0.proxy = .init(
                        .init(
                            host: "127.0.0.1", port: proxy.port, username: credentials ? "u" : nil,
                            password: credentials ? "hunter2" : nil))
                    $0.retry = .init(maximumRetries: 2, initialDelay: .milliseconds(10))
                }
                try await withEngine(on: server, configuration) { server, engine, dir in
                    let log = EventLog(engine.events())
                    let port = https ? try #require(server.tlsPort) : server.port
                    let url = (https ? "https" : "http") + "://127.0.0.1:\(port)/x"
                    let id = try await engine.add(.init(url: url, destination: dir + "/a"))
                    guard case .failed(let error) = await engine.result(of: id) else {
                        Issue.record("did not fail")
                        return
                    }
                    let expected =
                        "HTTP \(status) from proxy 127.0.0.1:\(proxy.port): "
                        + tail.replacingOccurrences(of: "{port}", with: "\(port)")
                    #expect(error.message.hasSuffix(expected), "\(error.message)")
                    #expect(error.status == status)
                    #expect(!error.message.contains("\n") && !error.message.contains("hunter2"))
                    #expect(error.kind == (retried ? "retries-exhausted" : "permanent-http-status"))
                    #expect(retryErrors(log, id).count == (retried ? 2 : 0))
                    #expect(proxy.requests.count == (retried ? 3 : 1))
                    #expect(requests(server, "/x").isEmpty)
                }
            }
        }
    }
}

/// What goes to a proxy and what its answers mean (``ProxyWire``): pure, over plain values.
@Suite("Proxy wire")
struct ProxyWireTests {
    typealias Server = DownloadConfiguration.Proxy.Server

    @Test("a URL's origin: default ports, IPv6 in brackets, path and query kept encoded, bad URLs refused")
    func origins() throws {
        let plain = try ProxyWire.origin(of: "http://Example.com/a%20b?x=1&y")
        #expect(plain.authority == "Example.com:80" || plain.authority == "example.com:80")
        #expect(plain.hostField.lowercased() == "example.com")
        #expect(plain.originForm == "/a%20b?x=1&y")
        #expect(plain.absoluteForm.lowercased() == "http://example.com/a%20b?x=1&y")
        #expect(!plain.isTLS)
        let secure = try ProxyWire.origin(of: "https://[::1]:8443")
        #expect(secure.isTLS && secure.host == "::1" && secure.port == 8443)
        #expect(secure.authority == "[::1]:8443" && secure.hostField == "[::1]:8443" && secure.originForm == "/")
        #expect(try ProxyWire.origin(of: "https://h/").authority == "h:443")
        #expect(try ProxyWire.origin(of: "https://h/").hostField == "h")
        for bad in ["ftp://h/x", "http:///x", "http://h:0/", "http://h:70000/", "not a url"] {
            #expect(throws: DownloadError.self, "\(bad)") { _ = try ProxyWire.origin(of: bad) }
        }
    }

    @Test(
        "http:// to the proxy: absolute form, Host, Proxy-Authorization from the proxy URL, the request's own left out")
    func absoluteForm() throws {
        let proxy = Server(host: "p", port: 3128, username: "us@r", password: "p:ss")
        let request = TransportRequest(
            url: "http://127.0.0.1:8080/bytes/1M?seed=1",
            headers: [("Range", "bytes=5-"), ("Proxy-Authorization", "Basic b3duOm9uZQ==")])
        let authorization = ProxyWire.authorization(for: proxy, request: request.headers)
        #expect(authorization == "Basic dXNAcjpwOnNz")
        let origin = try ProxyWire.origin(of: request.url)
        let head = try ProxyWire.requestHead(request, to: origin, tunnelled: false, authorization: authorization)
        #expect(head.method == .GET && head.uri == "http://127.0.0.1:8080/bytes/1M?seed=1")
        #expect(head.headers["Host"] == ["127.0.0.1:8080"])
        #expect(head.headers["Range"] == ["bytes=5-"])
        #expect(head.headers["Proxy-Authorization"] == ["Basic dXNAcjpwOnNz"])
        // Without credentials in the proxy URL, the request's own field is the proxy's.
        #expect(
            ProxyWire.authorization(for: .init(host: "p", port: 1), request: request.headers) == "Basic b3duOm9uZQ==")
        #expect(ProxyWire.authorization(for: .init(host: "p", port: 1), request: []) == nil)
    }

    @Test("https:// through a tunnel: CONNECT host:port with the credentials; the request in origin form without them")
    func tunnel() throws {
        let origin = try ProxyWire.origin(of: "https://files.example:8443/f?x")
        let connect = ProxyWire.connectHead(to: origin, authorization: "Basic eA==")
        #expect(connect.method == .CONNECT && connect.uri == "files.example:8443")
        #expect(connect.headers["Host"] == ["files.example:8443"])
        #expect(connect.headers["Proxy-Authorization"] == ["Basic eA=="])
        let request = TransportRequest(url: "https://files.example:8443/f?x", headers: [("Proxy-Authorization", "x")])
        let head = try ProxyWire.requestHead(request, to: origin, tunnelled: true, authorization: "Basic eA==")
        #expect(head.uri == "/f?x")
        #expect(head.headers["Proxy-Authorization"].isEmpty)
        #expect(head.headers["Host"] == ["files.example:8443"])
        let smuggling = TransportRequest(url: request.url, headers: [("X", "a\r\nB: c")])
        #expect(throws: DownloadError.self) {
            _ = try ProxyWire.requestHead(smuggling, to: origin, tunnelled: true, authorization: nil)
        }
    }

    @Test(
        "a response to an absolute-form request is the proxy's own when it is a 407 or carries the proxy's mark",
        arguments: [
            (407, [(String, String)](), true), (403, [], false), (503, [], false),
            (403, [("X-Squid-Error", "ERR_ACCESS_DENIED 0")], true),
            (503, [("Proxy-Status", "cache.example; error=destination_unavailable")], true),
            (503, [("Proxy-Status", "cache.example; received-status=503")], false),
            (503, [("Proxy-Status", "not a ; valid list ;;")], false),
            (200, [("X-Squid-Error", "ERR_ACCESS_DENIED 0")], false),
        ] as [(Int, [(String, String)], Bool)])
    func ownRefusal(status: Int, headers: [(String, String)], own: Bool) {
        #expect(ProxyWire.isProxysOwnRefusal(status: status, headers: headers.map { ($0.0, $0.1) }) == own)
    }

    @Test("a refusal names the proxy and its status, never its credentials; 408, 429, 502, 503, 504 are retried")
    func refusals() {
        let proxy = Server(host: "p", port: 3128, username: "u", password: "hunter2")
        for status in [400, 403, 405, 407, 408, 429, 500, 501, 502, 503, 504] {
            let error = ProxyWire.refusal(
                status: status, headers: [], proxy: proxy, request: "CONNECT h:443", sentCredentials: true)
            #expect(error.message.hasPrefix("HTTP \(status) from proxy p:3128: CONNECT h:443 refused"))
            #expect(error.status == status)
            #expect(!error.message.contains("hunter2"))
            #expect(error.isRetryable == [408, 429, 502, 503, 504].contains(status), "\(status)")
            #expect(error.kind == (error.isRetryable ? "retryable-http-status" : "permanent-http-status"))
        }
        let wanted = ProxyWire.refusal(
            status: 407, headers: [], proxy: .init(host: "p", port: 1), request: "GET http://h/", sentCredentials: false
        )
        #expect(
            wanted.message
                == "HTTP 407 from proxy p:1: GET http://h/ refused: it wants credentials (http://USER:PASSWORD@HOST:PORT)"
        )
        let marked = ProxyWire.refusal(
            status: 403, headers: [("x-squid-error", "ERR_ACCESS_DENIED 0")], proxy: proxy, request: "CONNECT h:8443",
            sentCredentials: false)
        #expect(marked.message == "HTTP 403 from proxy p:3128: CONNECT h:8443 refused (ERR_ACCESS_DENIED)")
    }
}
