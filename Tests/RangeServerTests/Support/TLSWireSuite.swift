import Foundation
import TestSupport
import Testing

@testable import RangeServer

/// What the suites that check a fault over plain HTTP and TLS, in a query and in a scenario step, share: a server
/// with its TLS port open and scenarios of the test's own, and one GET over TLS read raw.
protocol TLSWireSuite {}

extension TLSWireSuite {
    /// A server with the TLS port open and scenarios from `files` (name → JSON).
    func configuration(scenarios files: [String: String] = [:]) throws -> RangeServer.Configuration {
        let directory = try FaultWire.temporaryDirectory("wire-scenarios")
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return Fixtures.configuration {
            $0.tlsPort = 0
            $0.scenariosDirectory = directory
        }
    }

    /// One GET over TLS with `headers`: the status, the header fields (lower-case names) and the body.
    func tlsGet(
        _ server: RangeServer, _ target: String, headers: [String: String] = [:]
    ) async throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        let port = try #require(server.tlsPort)
        let trust = try #require(server.certificateAuthorityPEM)
        let result = try await TLSProbe.get(port: port, target: target, trustPEM: trust, headers: headers)
        let head = String(decoding: result.bytes.prefix(result.bytes.count - result.body.count), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, result.body)
    }
}
