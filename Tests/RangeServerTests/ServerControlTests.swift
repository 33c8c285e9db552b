import Testing

@testable import RangeServer

/// Who may use `/_control/`: loopback peers without a token, bearers of the token with one.
@Suite("Server control access")
struct ServerControlTests {
    @Test(
        "isLoopback accepts 127.0.0.0/8, ::1 and IPv4-mapped loopback only",
        arguments: [
            ("127.0.0.1", true), ("127.1.2.3", true), ("127.255.255.254", true), ("::1", true),
            ("::ffff:127.0.0.1", true), ("::ffff:127.9.9.9", true),
            ("10.0.0.1", false), ("192.168.1.127", false), ("128.0.0.1", false), ("0.0.0.0", false),
            ("::", false), ("::2", false), ("fe80::1", false), ("::ffff:10.0.0.1", false),
            ("2001:db8::127", false), ("unknown", false), ("", false),
        ]
    )
    func loopbackPeers(address: String, loopback: Bool) {
        #expect(isLoopback(address) == loopback)
    }

    /// A router as `RangeServer.start` builds it, to ask about peers a loopback-only network cannot produce.
    private func router(token: String? = nil) throws -> Router {
        let configuration = Fixtures.configuration { $0.controlToken = token }
        return Router(
            configuration: configuration, rootPath: Fixtures.files, scenarios: [:], journal: try Journal(limit: 10)
        )
    }

    private func request(
        _ method: String = "GET", _ target: String, peer: String, headers: [(name: String, value: String)] = []
    ) -> IncomingRequest {
        IncomingRequest(
            method: method, target: target, httpVersion: "HTTP/1.1",
            headers: headers.map { HeaderField($0.name, $0.value) }, peerAddress: peer,
            connectionID: 1
        )
    }

    @Test("without a token a non-loopback peer is refused with 403; loopback peers are served")
    func peerCheckWithoutToken() throws {
        let router = try router()
        for peer in ["10.1.2.3", "192.168.0.7", "fe80::1", "::ffff:10.0.0.1"] {
            for (method, target) in [
                ("GET", "/_control/journal"), ("POST", "/_control/reset"), ("GET", "/_control/scenarios"),
            ] {
                #expect(
                    router.plan(for: request(method, target, peer: peer)).status == 403, "\(peer) \(method) \(target)")
            }
        }
        for peer in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            #expect(router.plan(for: request("GET", "/_control/journal", peer: peer)).status == 200, "\(peer)")
        }
        // Only the control API is restricted.
        #expect(router.plan(for: request("GET", "/healthz", peer: "10.1.2.3")).status == 200)
    }

    @Test("with a token every peer needs it, loopback included")
    func tokenForEveryPeer() throws {
        let router = try router(token: "s3cret")
        let bearer = [(name: "authorization", value: "Bearer s3cret")]
        #expect(router.plan(for: request("GET", "/_control/journal", peer: "10.1.2.3", headers: bearer)).status == 200)
        #expect(router.plan(for: request("GET", "/_control/journal", peer: "10.1.2.3")).status == 401)
        #expect(router.plan(for: request("GET", "/_control/journal", peer: "127.0.0.1")).status == 401)
    }

    @Test("over the wire: without the bearer token 401, with it 200")
    func tokenOverTheWire() async throws {
        try await withRangeServer(Fixtures.configuration { $0.controlToken = "s3cret" }) { server in
            let missing = try await FaultWire.get(server, "/_control/journal")
            #expect(missing.status == 401)
            #expect(missing.header("www-authenticate") == "Bearer")

            let wrong = try await FaultWire.get(server, "/_control/journal", headers: ["Authorization": "Bearer nope"])
            #expect(wrong.status == 401)
            let basic = try await FaultWire.get(
                server, "/_control/reset", method: "POST", headers: ["Authorization": "Basic s3cret"])
            #expect(basic.status == 401)

            let good = try await FaultWire.get(server, "/_control/journal", headers: ["Authorization": "Bearer s3cret"])
            #expect(good.status == 200)
            let reset = try await FaultWire.get(
                server, "/_control/reset", method: "POST", headers: ["Authorization": "Bearer s3cret"]
            )
            #expect(reset.status == 200)
            let scenarios = try await FaultWire.get(
                server, "/_control/scenarios", headers: ["Authorization": "Bearer s3cret"])
            #expect(scenarios.status == 200)

            // The token guards only /_control/.
            let health = try await FaultWire.get(server, "/healthz")
            #expect(health.status == 200)
        }
    }

    @Test("without a token the loopback client is served")
    func loopbackOverTheWire() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let journal = try await FaultWire.get(server, "/_control/journal")
            #expect(journal.status == 200)
            let scenarios = try await FaultWire.get(server, "/_control/scenarios")
            #expect(scenarios.status == 200)
        }
    }

    @Test("wrong methods answer 405 with Allow; unknown control paths 404")
    func methodsAndPaths() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let put = try await FaultWire.get(server, "/_control/journal", method: "PUT")
            #expect(put.status == 405)
            #expect(put.header("allow") == "GET, HEAD, DELETE")
            let getReset = try await FaultWire.get(server, "/_control/reset")
            #expect(getReset.status == 405)
            #expect(getReset.header("allow") == "POST")
            let deleteScenarios = try await FaultWire.get(server, "/_control/scenarios", method: "DELETE")
            #expect(deleteScenarios.status == 405)
            let unknown = try await FaultWire.get(server, "/_control/nothing-here")
            #expect(unknown.status == 404)
        }
    }
}
