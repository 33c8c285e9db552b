import Conformance
import Testing

/// A row's `authorization`: every client that can send an Authorization is configured with it, as its users
/// configure a token, and one that cannot is n/a for the row.
@Suite struct AuthorizationTests {
    static let value = "Bearer rangecheck-token"

    static func job(authorization: String?) -> ClientJob {
        var job = ClientJob(
            transfers: [.init(url: "http://127.0.0.1:1/scenario/x/r", output: "/tmp/out/x.bin")],
            stateDirectory: "/tmp/state", logDirectory: "/tmp/logs")
        job.authorization = authorization
        return job
    }

    @Test("expect.authorization parses, and the row then needs a client that can send one")
    func theKeyParses() throws {
        let expectation = try ExpectationTests.parse(#"{"outcome": "success", "authorization": "Bearer t"}"#)
        #expect(expectation.authorization == "Bearer t")
        #expect(expectation.requiredCapabilities == [.authorization])
        var job = Self.job(authorization: nil)
        job.configure(for: expectation)
        #expect(job.authorization == "Bearer t")
    }

    @Test(
        "a bad authorization is one line naming the key",
        arguments: [
            #"{"outcome": "success", "authorization": ""}"#, #"{"outcome": "success", "authorization": "a\nb"}"#,
        ])
    func aBadValueIsRefused(json: String) {
        do {
            _ = try ExpectationTests.parse(json)
            Issue.record("accepted \(json)")
        } catch let error as ConformanceError {
            #expect(error.message.contains("expect.authorization: must be a non-empty header value"), "\(error)")
            #expect(!error.message.contains("\n"))
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("every built-in subprocess column sends the row's Authorization, and only when the row has one")
    func subprocessColumnsSendIt() throws {
        let clients: [SubprocessClient] = [
            .curl, .wget, .wget2, .aria2c, .aria2cSegmented, .axel, .axelSegmented,
            .rangefetch(nextTo: nil), .rangefetch(nextTo: nil, connections: 4),
        ]
        for client in clients {
            #expect(client.capabilities.contains(.authorization), "\(client.name)")
            let with = try #require(client.command(for: Self.job(authorization: Self.value)), "\(client.name)")
            #expect(
                with.arguments.contains { $0.hasSuffix("Authorization: \(Self.value)") }, "\(client.name): \(with.line)"
            )
            let without = try #require(client.command(for: Self.job(authorization: nil)), "\(client.name)")
            #expect(!without.arguments.contains { $0.contains("Authorization") }, "\(client.name): \(without.line)")
        }
    }

    @Test("a --client-command sends it through {authorization}; one without it is n/a for such a row")
    func commandsNeedThePlaceholder() throws {
        let with = try SubprocessClient.command("t=tool -H 'Authorization: {authorization}' -o {output} {url}")
        #expect(with.capabilities.contains(.authorization))
        let command = try #require(with.command(for: Self.job(authorization: Self.value)))
        #expect(command.arguments.contains("Authorization: \(Self.value)"), "\(command.line)")
        let without = try SubprocessClient.command("t=tool -o {output} {url}")
        #expect(!without.capabilities.contains(.authorization))
    }
}
