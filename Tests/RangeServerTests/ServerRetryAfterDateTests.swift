import Foundation
import HTTPVocabulary
import NIOCore
import TestSupport
import Testing

@testable import RangeServer

/// `retry-after=date:+Ns`: Retry-After as an IMF-fixdate N seconds ahead, over plain HTTP and TLS, in a query and in a
/// scenario step, read with raw clients.
@Suite("Retry-After dates")
struct ServerRetryAfterDateTests: TLSWireSuite {
    /// The seconds a Retry-After date lies after the response's Date, both parsed as HTTP-dates.
    private func secondsAhead(_ retryAfter: String?, date: String?) throws -> Int64 {
        let retry = try #require(retryAfter.flatMap { HTTPDate(parsing: $0) }, "\(retryAfter ?? "none")")
        let sent = try #require(date.flatMap { HTTPDate(parsing: $0) }, "\(date ?? "none")")
        // An IMF-fixdate exactly: what it parses to prints back to the same text.
        #expect(retry.headerValue == retryAfter)
        return retry.secondsSince1970 - sent.secondsSince1970
    }

    /// The header fields of a TLS response (lower-case names) and its status.
    private func tlsHead(_ server: RangeServer, _ target: String) async throws -> (Int, [String: String]) {
        let port = try #require(server.tlsPort)
        let trust = try #require(server.certificateAuthorityPEM)
        let result = try await TLSProbe.get(port: port, target: target, trustPEM: trust)
        let head = String(decoding: result.bytes.prefix(result.bytes.count - result.body.count), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields)
    }

    @Test("retry-after=date:+Ns sends an IMF-fixdate N seconds after the Date, over http and https")
    func dateAhead() async throws {
        try await withRangeServer(configuration()) { server in
            // Escaped and unescaped: an unescaped + arrives as a space, and is read as the +.
            for target in [
                "/bytes/1K?status=503&retry-after=date:%2B30s", "/bytes/1K?status=503&retry-after=date:+30s",
            ] {
                let plain = try await FaultWire.get(server, target)
                #expect(plain.status == 503)
                // Planned and dated within the same second, or the Date a second later.
                let ahead = try secondsAhead(plain.header("retry-after"), date: plain.header("date"))
                #expect(ahead == 30 || ahead == 29, "\(ahead)")
                let (status, fields) = try await tlsHead(server, target)
                #expect(status == 503)
                let secureAhead = try secondsAhead(fields["retry-after"], date: fields["date"])
                #expect(secureAhead == 30 || secureAhead == 29, "\(secureAhead)")
            }
            let entries = try await FaultWire.entries(server, target: "/bytes/1K?status=503&retry-after=date:%2B30s")
            #expect(entries.count == 2)
            #expect(entries.allSatisfy { $0.faults == ["status=503", "retry-after=date:+30s"] })
            // Seconds are unchanged.
            let seconds = try await FaultWire.get(server, "/bytes/1K?status=503&retry-after=7")
            #expect(seconds.header("retry-after") == "7")
        }
    }

    @Test("connection-cap's 503 carries the date too")
    func capDate() async throws {
        try await withRangeServer(configuration()) { server in
            let port = server.port
            let target = "/bytes/1M?rate=64K&connection-cap=1&retry-after=date:%2B5s"
            // The second request goes out as soon as the first's status line is in, on the same thread (as the
            // connection-cap tests do): the first's paced body (16 s) is still going, so its slot is taken.
            let refused = try await FaultWire.blocking {
                let held = try RawHTTPConnection(port: port)
                try held.request("GET", target)
                _ = try held.readStatus()
                return try rawRequest(port: port, "GET", target)
                // `held` closes here, mid-body.
            }
            #expect(refused.status == 503)
            let ahead = try secondsAhead(refused.header("retry-after"), date: refused.header("date"))
            #expect(ahead == 5 || ahead == 4, "\(ahead)")
        }
    }

    @Test("retry-after=date:+Ns in a scenario step; a query's status and seconds replace it")
    func dateInAStep() async throws {
        let scenario = """
            {
              "description": "The first attempt is refused until a date.",
              "resource": "/bytes/8K?seed=51",
              "attempts": [ { "status": 503, "retry-after": "date:+2s" }, {} ]
            }
            """
        try await withRangeServer(configuration(scenarios: ["dated.json": scenario])) { server in
            let first = try await FaultWire.get(server, "/scenario/dated/run1")
            #expect(first.status == 503)
            let ahead = try secondsAhead(first.header("retry-after"), date: first.header("date"))
            #expect(ahead == 2 || ahead == 1, "\(ahead)")
            let second = try await FaultWire.get(server, "/scenario/dated/run1")
            #expect(second.status == 200)
            // retry-after follows status: a query's status brings its own seconds.
            let overridden = try await FaultWire.get(server, "/scenario/dated/run2?status=429&retry-after=9")
            #expect(overridden.status == 429)
            #expect(overridden.header("retry-after") == "9")
        }
    }

    @Test("retry-after takes seconds or date:+Ns, answered 400 with one line naming it otherwise")
    func badValues() async throws {
        try await withRangeServer(configuration()) { server in
            for value in ["date:%2B30", "date:30s", "date:%2B-1s", "date:%2B1000000000s", "soon"] {
                let response = try await FaultWire.get(server, "/bytes/1K?status=503&retry-after=" + value)
                #expect(response.status == 400)
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(body.contains("expected a whole number of seconds, or date:+Ns"), "\(body)")
                #expect(body.split(separator: "\n").count == 1, "\(body)")
            }
        }
    }
}
