import Foundation
import RangeServer
import TestSupport
import Testing

/// Runs `scripts/lib/h2probe.py`, an HTTP/2 client on Python's h2 (not SwiftNIO), and reads its report: what the
/// frames said, per stream and for the connection.
///
/// The interpreter is `$RANGE_TEST_H2_PYTHON`, or the venv `scripts/test` makes (`.build/h2-venv`, see
/// `ensure_h2_probe` in scripts/lib/common.sh); a test without it fails, naming the command that makes it.
enum H2Probe {
    /// What the probe saw of one stream.
    struct Stream: Decodable {
        var path: String
        var status: Int?
        var headers: [[String]]
        var bytes: Int
        var endStream: Bool
        var reset: Int?
        var sha256: String?

        /// The first value of a field (names arrive lower-case over HTTP/2).
        func header(_ name: String) -> String? {
            headers.first { $0.first == name }?.last
        }
    }

    /// One GOAWAY frame.
    struct GoAway: Decodable, Equatable {
        var last: Int
        var code: Int
    }

    /// The probe's whole report.
    struct Report: Decodable {
        var alpn: String?
        var streams: [String: Stream]
        var goaways: [GoAway]
        var settings: [String: Int]
        var pingsAnswered: Int
        var ended: String?
        var errors: [String]
        var floodSent: Int

        /// The stream of the `index`th request (0-based): streams are 1, 3, 5, ...
        func stream(_ index: Int) throws -> Stream {
            try #require(streams[String(2 * index + 1)], "no stream for request \(index): \(streams.keys.sorted())")
        }
    }

    /// The answer of `--http1`.
    struct HTTP1Report: Decodable {
        var alpn: String?
        var http1: String
    }

    static let python: String = {
        if let given = ProcessInfo.processInfo.environment["RANGE_TEST_H2_PYTHON"], !given.isEmpty { return given }
        return Fixtures.packageRoot + "/.build/h2-venv/bin/python"
    }()

    static let script = Fixtures.packageRoot + "/scripts/lib/h2probe.py"

    /// Sends `requests` (paths, with `|name=value` fields) at once on one connection to `port` and reports.
    static func run(
        port: Int, tls: RangeServer? = nil, requests: [String], options: [String] = [], timeout: Int = 10
    ) async throws -> Report {
        var arguments = [script, "--port", String(port), "--timeout", String(scaled(seconds: timeout))]
        if let tls { arguments += ["--tls", "--ca", try #require(tls.certificateAuthorityPath)] }
        let output = try await launch(arguments + options + requests, limit: timeout)
        return try JSONDecoder().decode(Report.self, from: Data(output.utf8))
    }

    /// One HTTP/1.1 request over TLS that offers only `http/1.1` by ALPN.
    static func http1(port: Int, server: RangeServer, target: String) async throws -> HTTP1Report {
        let arguments = [
            script, "--http1", "--tls", "--ca", try #require(server.certificateAuthorityPath), "--port", String(port),
            target,
        ]
        let output = try await launch(arguments, limit: 10)
        return try JSONDecoder().decode(HTTP1Report.self, from: Data(output.utf8))
    }

    private static func launch(_ arguments: [String], limit: Int) async throws -> String {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("no Python with h2 at \(python): run scripts/test, or set RANGE_TEST_H2_PYTHON")
            throw CancellationError()
        }
        let child = try await ChildProcess.start(python, arguments)
        let status = await child.wait(limit: .seconds(scaled(seconds: limit + 20)))
        guard let status, ChildProcess.code(status) == 0 else {
            Issue.record("h2probe failed (\(String(describing: status))): \(child.errors)")
            throw CancellationError()
        }
        return child.output
    }
}
