import Foundation
import NIOCore
import RangeServer
import TestSupport
import Testing
import X509

/// The TLS port: the throwaway CA and its leaves, serving, the journal's `tls`, the faults over TLS and the fault
/// listeners, and the errors for bad certificate input.
@Suite("TLS")
struct ServerTLSTests {
    static func tlsConfiguration(
        _ change: (inout RangeServer.Configuration) -> Void = { _ in }
    )
        -> RangeServer.Configuration
    {
        Fixtures.configuration {
            $0.tlsPort = 0
            change(&$0)
        }
    }

    @Test("the CA issues a leaf that verifies against it, for the asked names, for at most 397 days, for serverAuth")
    func leafVerifiesAgainstCA() throws {
        let now = Date()
        let authority = try CertificateAuthority.create(now: now)
        let identity = try authority.issue(
            names: ["localhost", "127.0.0.1", "::1", "phone.lan"], notValidBefore: now - 3600,
            notValidAfter: now + 397 * 86_400)
        let ca = try Certificate(pemEncoded: authority.certificatePEM)
        let leaf = try Certificate(pemEncoded: identity.certificateChainPEM)
        #expect(ca.publicKey.isValidSignature(leaf.signature, for: leaf))
        #expect(leaf.issuer == ca.subject)
        #expect(try ca.extensions.basicConstraints == .isCertificateAuthority(maxPathLength: 0))
        #expect(try leaf.extensions.basicConstraints == .notCertificateAuthority)
        #expect(try leaf.extensions.extendedKeyUsage?.contains(.serverAuth) == true)
        let names = try #require(try leaf.extensions.subjectAlternativeNames)
        #expect(names.contains(.dnsName("localhost")))
        #expect(names.contains(.dnsName("phone.lan")))
        #expect(names.contains(.ipAddress(.init(contentBytes: [127, 0, 0, 1]))))
        #expect(names.contains(.ipAddress(.init(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))))
        #expect(leaf.notValidAfter.timeIntervalSince(leaf.notValidBefore) <= 398 * 86_400)
        #expect(leaf.notValidBefore <= now && leaf.notValidAfter > now)
        // Key identifiers link the leaf to its CA, as strict verifiers require.
        #expect(
            try leaf.extensions.authorityKeyIdentifier?.keyIdentifier
                == ca.extensions.subjectKeyIdentifier?.keyIdentifier)
        // A CA loaded back from its PEM issues leaves that verify against the same certificate.
        let reloaded = try CertificateAuthority(
            certificatePEM: authority.certificatePEM, privateKeyPEM: authority.privateKeyPEM)
        let again = try Certificate(
            pemEncoded: try reloaded.issue(names: ["localhost"], notValidBefore: now, notValidAfter: now + 60)
                .certificateChainPEM)
        #expect(ca.publicKey.isValidSignature(again.signature, for: again))
    }

    @Test("a name that is neither a host name nor an IP address is refused, naming it")
    func badNameRefused() throws {
        let authority = try CertificateAuthority.create()
        #expect(throws: RangeServerError.self) {
            try authority.issue(names: ["bad name"], notValidBefore: Date(), notValidAfter: Date() + 60)
        }
        do {
            _ = try RangeServer.start(Self.tlsConfiguration { $0.tlsNames = ["exa mple"] })
            Issue.record("started with a bad --tls-name")
        } catch let error as RangeServerError {
            #expect(error.message == "--tls-name 'exa mple': not a host name or an IP address")
        }
    }

    @Test("--tls-dir keeps the CA: a second start reuses it; a temporary directory is removed at stop")
    func directoryReused() async throws {
        let directory = try FaultWire.temporaryDirectory("tls-dir") + "/nested"
        let first = try await withRangeServer(Self.tlsConfiguration { $0.tlsDirectory = directory }) { server in
            #expect(server.certificateAuthorityPath == directory + "/ca.pem")
            return try #require(server.certificateAuthorityPEM)
        }
        #expect(try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8) == first)
        let second = try await withRangeServer(Self.tlsConfiguration { $0.tlsDirectory = directory }) { server in
            try #require(server.certificateAuthorityPEM)
        }
        #expect(first == second)
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/ca-key.pem")[.posixPermissions]
        #expect((mode as? Int) == 0o600)
        let temporary = try await withRangeServer(Self.tlsConfiguration()) { server in
            let path = try #require(server.certificateAuthorityPath)
            #expect(FileManager.default.fileExists(atPath: path))
            return path
        }
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test("the TLS port serves the same bytes as the plain port, journalled with tls: true")
    func servesOverTLS() async throws {
        try await withRangeServer(Self.tlsConfiguration()) { server in
            let port = try #require(server.tlsPort)
            #expect(server.tlsBaseURL == "https://127.0.0.1:\(port)")
            let trust = try #require(server.certificateAuthorityPEM)
            let secure = try await TLSProbe.get(port: port, target: "/bytes/64K?seed=3", trustPEM: trust)
            #expect(String(decoding: secure.bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 200")
            let plain = try await FaultWire.get(server, "/bytes/64K?seed=3")
            #expect(secure.body == plain.body)
            #expect(secure.ending == .closeNotify)
            let entries = try await FaultWire.entries(server, target: "/bytes/64K?seed=3", count: 2)
            #expect(entries.map(\.tls).sorted { !$0 && $1 } == [false, true])
            // The journal document carries the key.
            let line = String(decoding: try #require(entries.first { $0.tls }).jsonBytes, as: UTF8.self)
            #expect(
                line.contains(
                    #","tls":true,"abandoned":false,"requestHeaderList":[{"name":"Host","value":"localhost"}"#))
        }
    }

    @Test("over TLS, drop-after sends close_notify, tls-truncate-after does not, reset-after resets")
    func connectionEndings() async throws {
        try await withRangeServer(Self.tlsConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let trust = try #require(server.certificateAuthorityPEM)
            let dropped = try await TLSProbe.get(port: port, target: "/bytes/1M?drop-after=100K", trustPEM: trust)
            #expect(dropped.body.count == 100 * 1024)
            #expect(dropped.ending == .closeNotify)
            let truncated = try await TLSProbe.get(
                port: port, target: "/bytes/1M?tls-truncate-after=100K", trustPEM: trust)
            #expect(truncated.body.count == 100 * 1024)
            #expect(truncated.ending == .uncleanShutdown)
            let reset = try await TLSProbe.get(port: port, target: "/bytes/1M?reset-after=100K", trustPEM: trust)
            #expect(reset.body.count <= 100 * 1024)
            #expect(reset.ending != .closeNotify && reset.ending != .timedOut)
            let entries = await FaultWire.waitForJournal(server)
            #expect(entries.first { $0.target.contains("tls-truncate-after") }?.outcome == .truncated)
            #expect(entries.first { $0.target.contains("drop-after") }?.outcome == .dropped)
            #expect(entries.allSatisfy { $0.tls })
            // On plain HTTP, the truncation is an ordinary close.
            let plain = try rawRequest(port: server.port, "GET", "/bytes/1M?tls-truncate-after=100K")
            #expect(plain.body.count == 100 * 1024)
        }
    }

    @Test("a client that leaves a paced body over TLS is journalled client-closed with no fewer bytes than it got")
    func clientClosedOverTLS() async throws {
        try await withRangeServer(Self.tlsConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let trust = try #require(server.certificateAuthorityPEM)
            // Leaves 0.7 s into a 4 s body; both stretched by the time scale, so the handshake and the first bytes
            // still come before the client leaves when instrumented code runs slowly.
            let left = try await TLSProbe.get(
                port: port, target: "/bytes/4M?rate=\(paced(1024))", trustPEM: trust,
                limit: TimeAmount(scaled(.milliseconds(700))))
            #expect(left.ending == .timedOut)
            #expect(left.body.count > 0)
            let entries = await FaultWire.waitForJournal(server)
            let entry = try #require(entries.first)
            #expect(entry.outcome == .clientClosed)
            // A kill or a pause must never look like a resume past what the server sent (the judge's rule).
            #expect(entry.bodyBytesSent >= UInt64(left.body.count), "\(entry.bodyBytesSent) < \(left.body.count)")
            #expect(entry.bodyBytesSent < 4 * 1024 * 1024)
        }
    }

    @Test("bad-chunk-after, which writes past the TLS layer, answers 400 on the TLS port naming it")
    func rawFaultRefusedOverTLS() async throws {
        try await withRangeServer(Self.tlsConfiguration()) { server in
            let port = try #require(server.tlsPort)
            let trust = try #require(server.certificateAuthorityPEM)
            let result = try await TLSProbe.get(port: port, target: "/bytes/1M?bad-chunk-after=1K", trustPEM: trust)
            let text = String(decoding: result.bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 400"))
            #expect(text.contains("parameter 'bad-chunk-after=1K' works on plain HTTP only"))
        }
    }

    @Test("handshake-fail answers with an alert, handshake-stall never answers")
    func handshakeFaults() async throws {
        try await withRangeServer(Self.tlsConfiguration { $0.tlsFaults = true }) { server in
            let trust = try #require(server.certificateAuthorityPEM)
            #expect(Set(server.tlsFaultPorts.keys) == Set(TLSFault.allCases))
            let failPort = try #require(server.tlsFaultPorts[.handshakeFail])
            let failed = try await TLSProbe.get(port: failPort, target: "/bytes/1K", trustPEM: trust)
            #expect(failed.bytes.isEmpty)
            #expect(failed.ending.description.contains("HANDSHAKE_FAILURE"))
            let stallPort = try #require(server.tlsFaultPorts[.handshakeStall])
            let stalled = try await TLSProbe.get(
                port: stallPort, target: "/bytes/1K", trustPEM: trust, limit: .milliseconds(800))
            #expect(stalled.bytes.isEmpty)
            #expect(stalled.ending == .timedOut)
        }
    }

    @Test("cert-expired, cert-wrong-host and cert-untrusted fail curl's verification for their reason")
    func certificateFaults() async throws {
        try await withRangeServer(Self.tlsConfiguration { $0.tlsFaults = true }) { server in
            let authority = try #require(server.certificateAuthorityPath)
            let expected: [(TLSFault, String)] = [
                (.certExpired, "certificate has expired"),
                (.certWrongHost, "no alternative certificate subject name matches"),
                (.certUntrusted, "unable to get local issuer certificate"),
            ]
            // curl's --max-time is a deadline (stretched by the time scale): one it hit would end curl with 28.
            let maxTime = String(scaled(seconds: 10) as Int)
            for (fault, reason) in expected {
                let url = try #require(server.tlsFaultBaseURL(fault)) + "/bytes/1K"
                let curl = try await ChildProcess.start(
                    "/usr/bin/curl", ["-sS", "--max-time", maxTime, "--cacert", authority, "-o", "/dev/null", url])
                guard case .exited(let code) = await curl.wait(limit: .seconds(20)) else {
                    Issue.record("curl did not end for \(fault)")
                    continue
                }
                #expect(code == 60, "\(fault): \(curl.errors)")
                #expect(curl.errors.contains(reason), "\(fault): \(curl.errors)")
                // The path is served to a client that does not verify.
                let insecure = try await ChildProcess.start(
                    "/usr/bin/curl", ["-sS", "-k", "--max-time", maxTime, "-o", "/dev/null", "-w", "%{http_code}", url])
                _ = await insecure.wait(limit: .seconds(20))
                #expect(insecure.output == "200", "\(fault)")
            }
        }
    }

    @Test("a scenario redirects to the other scheme and to a TLS fault listener, opening what it needs")
    func scenarioRedirects() async throws {
        let directory = try FaultWire.temporaryDirectory("tls-scenarios")
        let scenario = """
            {
              "description": "Across listeners.",
              "resource": "/bytes/4K",
              "attempts": [ { "redirect": "https:/bytes/1K" }, { "redirect": "tls:handshake-stall:/bytes/2K" },
                            { "redirect": "edge", "redirect-host": "localhost" } ],
              "routes": { "edge": { "attempts": [ { "redirect": "http:/bytes/3K" } ] } }
            }
            """
        try scenario.write(toFile: directory + "/across.json", atomically: true, encoding: .utf8)
        try await withRangeServer(Fixtures.configuration { $0.scenariosDirectory = directory }) { server in
            let port = try #require(server.tlsPort, "a scenario redirecting to https: opens the TLS port")
            let stall = try #require(server.tlsFaultPorts[.handshakeStall])
            #expect(server.tlsFaultPorts.count == 1)
            let first = try await FaultWire.get(server, "/scenario/across/r1")
            #expect(first.header("location") == "https://127.0.0.1:\(port)/bytes/1K")
            let second = try await FaultWire.get(server, "/scenario/across/r1")
            #expect(second.header("location") == "https://127.0.0.1:\(stall)/bytes/2K")
            // Over TLS, redirect-host keeps the scheme and the TLS port.
            let trust = try #require(server.certificateAuthorityPEM)
            let third = try await TLSProbe.get(port: port, target: "/scenario/across/r1", trustPEM: trust)
            let text = String(decoding: third.bytes, as: UTF8.self).lowercased()
            #expect(text.contains("location: https://localhost:\(port)/scenario/across/r1/edge\r\n"))
            let edge = try await TLSProbe.get(port: port, target: "/scenario/across/r1/edge", trustPEM: trust)
            #expect(
                String(decoding: edge.bytes, as: UTF8.self).lowercased().contains(
                    "location: http://localhost:\(server.port)/bytes/3k\r\n"))
        }
    }

    @Test("a malformed listener redirect is a scenario error naming the grammar")
    func malformedListenerRedirect() throws {
        let directory = try FaultWire.temporaryDirectory("tls-bad-scenario")
        let scenario = """
            { "description": "Bad.", "resource": "/bytes/4K", "attempts": [ { "redirect": "tls:no-such-fault:/x" } ] }
            """
        try scenario.write(toFile: directory + "/bad.json", atomically: true, encoding: .utf8)
        do {
            _ = try RangeServer.start(Fixtures.configuration { $0.scenariosDirectory = directory })
            Issue.record("loaded a bad redirect")
        } catch let error as RangeServerError {
            #expect(error.message.contains("tls:FAULT:/PATH with FAULT one of handshake-fail"))
        }
    }

    @Test("--tls-cert and --tls-key: a given pair is served; a missing file, a half pair and a foreign key are refused")
    func givenPair() async throws {
        let directory = try FaultWire.temporaryDirectory("tls-pair")
        let authority = try CertificateAuthority.create()
        let identity = try authority.issue(
            names: ["localhost"], notValidBefore: Date() - 60, notValidAfter: Date() + 3600)
        let other = try authority.issue(names: ["localhost"], notValidBefore: Date() - 60, notValidAfter: Date() + 3600)
        try identity.certificateChainPEM.write(toFile: directory + "/cert.pem", atomically: true, encoding: .utf8)
        try identity.privateKeyPEM.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        try other.privateKeyPEM.write(toFile: directory + "/other-key.pem", atomically: true, encoding: .utf8)
        try await withRangeServer(
            Self.tlsConfiguration {
                $0.tlsCertificateFile = directory + "/cert.pem"
                $0.tlsKeyFile = directory + "/key.pem"
            }
        ) { server in
            #expect(server.certificateAuthorityPath == directory + "/cert.pem")
            #expect(server.certificateAuthorityPEM == identity.certificateChainPEM)
            let port = try #require(server.tlsPort)
            let result = try await TLSProbe.get(port: port, target: "/bytes/1K", trustPEM: authority.certificatePEM)
            #expect(result.body.count == 1024)
        }
        let cases: [(String?, String?, String)] = [
            (directory + "/missing.pem", directory + "/key.pem", "--tls-cert '\(directory)/missing.pem': no such file"),
            (directory + "/cert.pem", nil, "--tls-cert and --tls-key must be given together"),
            (
                directory + "/cert.pem", directory + "/other-key.pem",
                "--tls-key '\(directory)/other-key.pem' does not belong to the certificate in --tls-cert "
                    + "'\(directory)/cert.pem'"
            ),
            (
                directory + "/key.pem", directory + "/key.pem",
                "--tls-cert '\(directory)/key.pem': not a PEM certificate"
            ),
        ]
        for (certificate, key, message) in cases {
            do {
                let server = try RangeServer.start(
                    Self.tlsConfiguration {
                        $0.tlsCertificateFile = certificate
                        $0.tlsKeyFile = key
                    })
                server.stop()
                Issue.record("started with \(message)")
            } catch let error as RangeServerError {
                #expect(error.message == message)
            }
        }
    }
}
