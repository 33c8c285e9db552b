import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// `connection-cap=N` over the wire: N responses in progress per peer address and target, 503 for the rest, the
/// slots given back when responses end.
@Suite("Server over the wire: connection-cap")
struct ServerConnectionCapTests {
    @Test("N responses in progress for one client and URL; the next gets 503 with Retry-After; slots come back")
    func capAndRelease() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let port = server.port
            // Each held response stalls after 1K for a second, so both are in progress when the third arrives. The
            // second is a window for the third request to arrive in, not a timing the test checks, so it is stretched
            // by the time scale; both responses then end by themselves, which frees their slots.
            let target = "/bytes/64K?seed=9&connection-cap=2&stall-after=1K&stall-for=\(scaled(seconds: 1) as Int)s"
            let (statuses, extra, otherURL) = try await FaultWire.blocking {
                let first = try RawHTTPConnection(port: port)
                let second = try RawHTTPConnection(port: port)
                try first.request("GET", target, close: true)
                try second.request("GET", target, close: true)
                let statuses = [try first.readStatus(), try second.readStatus()]
                let extra = try rawRequest(port: port, "GET", target)
                let otherURL = try rawRequest(port: port, "GET", "/bytes/1K?connection-cap=2")
                // The rest of both bodies, up to the server's close: both responses end.
                _ = first.readToEnd()
                _ = second.readToEnd()
                return (statuses, extra, otherURL)
            }
            #expect(statuses == [200, 200])
            #expect(extra.status == 503)
            #expect(extra.header("retry-after") == "1")
            #expect(String(decoding: extra.body, as: UTF8.self).contains("connection-cap=2"))
            // Another URL is counted on its own.
            #expect(otherURL.status == 200)
            #expect(otherURL.body == FaultWire.expected(seed: 0, count: 1024))

            // Both held responses have ended: a slot is free again.
            let after = try await FaultWire.get(server, target)
            #expect(after.status == 200)
            #expect(after.body == FaultWire.expected(seed: 9, count: 65_536))
            let entries = try await FaultWire.entries(server, target: target, count: 4)
            #expect(entries.map(\.status).sorted() == [200, 200, 200, 503])
            #expect(entries.allSatisfy { $0.faults.contains("connection-cap=2") })
        }
    }

    @Test("retry-after sets the 503's Retry-After; a client that left gives its slot back")
    func retryAfterAndClientLeaving() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let port = server.port
            let target = "/bytes/1M?connection-cap=1&retry-after=7&rate=64K"
            let extra = try await FaultWire.blocking {
                let held = try RawHTTPConnection(port: port)
                try held.request("GET", target)
                #expect(try held.readStatus() == 200)
                let extra = try rawRequest(port: port, "GET", target)
                return extra
                // `held` closes here, mid-body.
            }
            #expect(extra.status == 503)
            #expect(extra.header("retry-after") == "7")
            // The paced response notices the close at its next write (a pacing slice is a tenth of a second or less);
            // the bound is generous as the loop ends at the first 200, and a full test run keeps the machine busy.
            let deadline = ContinuousClock.now + scaled(.seconds(20))
            var status = 0
            while ContinuousClock.now < deadline {
                status = try await FaultWire.blocking {
                    let connection = try RawHTTPConnection(port: port)
                    try connection.request("GET", target)
                    return try connection.readStatus()
                }
                if status == 200 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(status == 200)
        }
    }

    @Test("the counter: slots per key up to the limit, given back one by one, and forgotten at zero")
    func counter() {
        let caps = ConnectionCapCounter()
        let key = ConnectionCapCounter.key(peerAddress: "::1", target: "/bytes/1M?connection-cap=2")
        #expect(caps.acquire(key, limit: 2))
        #expect(caps.acquire(key, limit: 2))
        #expect(!caps.acquire(key, limit: 2))
        #expect(
            caps.acquire(
                ConnectionCapCounter.key(peerAddress: "127.0.0.2", target: "/bytes/1M?connection-cap=2"), limit: 2))
        caps.release(key)
        #expect(caps.held(key) == 1)
        #expect(caps.acquire(key, limit: 2))
        caps.release(key)
        caps.release(key)
        caps.release(key)  // one more than taken: ignored
        #expect(caps.held(key) == 0)
    }

    @Test(
        "bad values are a 400 naming the parameter",
        arguments: [
            "connection-cap=0", "connection-cap=-1", "connection-cap=x", "connection-cap=10001", "retry-after=3",
        ]
    )
    func badValues(query: String) async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let response = try await FaultWire.get(server, "/bytes/1K?" + query)
            #expect(response.status == 400)
            #expect(String(decoding: response.body, as: UTF8.self).contains(query))
        }
    }
}
