import Conformance
import Crypto
import Foundation
import RangeServer
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Talks to a `ConformanceService` over HTTP, as a remote client would.
struct ServiceClient {
    /// One answer.
    struct Answer {
        var status: Int
        var contentType: String
        var body: Data
        var setCookie: String?

        /// The body as a JSON object (empty when it is not one).
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        /// The body as text.
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    let base: String
    var token: String?

    /// A session that keeps no cookies: a test sends the ones it means to.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        return URLSession(configuration: configuration)
    }()

    func send(
        _ method: String, _ path: String, json: Any? = nil, raw: String? = nil, cookie: String? = nil
    ) async throws -> Answer {
        var request = URLRequest(url: URL(string: path.hasPrefix("http") ? path : base + path)!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json { request.httpBody = try JSONSerialization.data(withJSONObject: json) }
        if let raw { request.httpBody = Data(raw.utf8) }
        if let cookie { request.setValue(cookie, forHTTPHeaderField: "Cookie") }
        // Cookies are the test's to send, not the session's to keep.
        request.httpShouldHandleCookies = false
        let (data, response) = try await Self.session.data(for: request)
        let http = response as! HTTPURLResponse
        return Answer(
            status: http.statusCode, contentType: http.value(forHTTPHeaderField: "Content-Type") ?? "", body: data,
            setCookie: http.value(forHTTPHeaderField: "Set-Cookie"))
    }

    /// Creates a run; fails the caller when the answer is not 201.
    func createRun(_ scenario: String, client: String, scheme: String = "http") async throws -> [String: Any] {
        let answer = try await send(
            "POST", "/_conformance/runs", json: ["scenario": scenario, "client": client, "scheme": scheme])
        guard answer.status == 201 else {
            throw ServiceTestError("createRun \(scenario): \(answer.status) \(answer.text)")
        }
        return answer.object
    }

    /// Runs `version-change` as `curl -C -` does and reports what it keeps: the first megabyte of version 1 (its
    /// first response, dropped there), then the rest of version 2 (asked for with Range and no If-Range).
    ///
    /// - Returns: the verdict's answer.
    func judgeSplice(label: String) async throws -> Answer {
        let run = try await createRun("version-change", client: label)
        guard let url = (run["urls"] as? [[String: Any]])?.first?["url"] as? String,
            let result = run["result"] as? String
        else { throw ServiceTestError("version-change: no URL or result in \(run)") }
        var request = URLRequest(url: URL(string: url)!)
        _ = try? await Self.session.data(for: request)
        request.setValue("bytes=1048576-", forHTTPHeaderField: "Range")
        _ = try? await Self.session.data(for: request)
        let spliced =
            generated(length: 4 << 20, seed: 11, version: 1).prefix(1 << 20)
            + generated(length: 4 << 20, seed: 11, version: 2).suffix(from: 1 << 20)
        return try await send(
            "POST", result, json: ["outcome": "success", "outputs": [Self.output(route: "", Data(spliced))]])
    }

    /// Downloads a URL whole with URLSession (no resume): what a naive client keeps.
    func download(_ url: String) async throws -> Data {
        let (data, _) = try await Self.session.data(from: URL(string: url)!)
        return data
    }

    /// The output object a client reports for `data`.
    static func output(route: String, _ data: Data) -> [String: Any] {
        ["route": route, "size": data.count, "sha256": hex(SHA256.hash(data: data)), "blocks": blocks(data)]
    }

    /// The SHA-256 of each 64 KiB block.
    static func blocks(_ data: Data) -> [String] {
        stride(from: 0, to: data.count, by: 65536).map { start in
            hex(SHA256.hash(data: data[start..<min(data.count, start + 65536)]))
        }
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String { digest.map { String(format: "%02x", $0) }.joined() }
}

/// Generated content of `/bytes` for a seed and version, as the server sends it.
func generated(length: Int, seed: UInt64, version: UInt64) -> Data {
    var bytes = [UInt8](repeating: 0, count: length)
    bytes.withUnsafeMutableBytes { ContentGenerator(seed: seed, version: version).fill($0, offset: 0) }
    return Data(bytes)
}

struct ServiceTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a conformance service on a free loopback port, serving the repository's catalogue.
func withService<T>(
    _ change: (inout ConformanceService.Configuration) -> Void = { _ in },
    server serverChange: (inout RangeServer.Configuration) -> Void = { _ in },
    _ body: (ConformanceService, RangeServer, ServiceClient) async throws -> T
) async throws -> T {
    var configuration = ConformanceService.Configuration()
    configuration.scenariosDirectory = repositoryPath("fixtures/scenarios")
    configuration.filesRoot = repositoryPath("fixtures/files")
    change(&configuration)
    let service = try ConformanceService(configuration)
    var serverConfiguration = RangeServer.Configuration()
    serverChange(&serverConfiguration)
    let server = try service.startServer(serverConfiguration)
    do {
        let result = try await body(service, server, ServiceClient(base: server.baseURL, token: configuration.token))
        server.stop()
        return result
    } catch {
        server.stop()
        throw error
    }
}

/// A path in the repository (`swift test` runs in the package's root).
func repositoryPath(_ relative: String) -> String { BuiltProducts.repositoryRoot + "/" + relative }

/// A clock a test moves by hand, so a service's runs expire without waiting.
final class TestClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    /// Moves the clock on.
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }

    /// The clock as a configuration takes it.
    var read: @Sendable () -> ContinuousClock.Instant { { self.instant.withLock { $0 } } }
}

extension ServiceClient {
    /// Runs `plain` as a whole download and reports it; `corrupt` reports a wrong last byte (a fail).
    ///
    /// - Returns: the run token and the verdict's answer.
    func judgePlain(label: String, corrupt: Bool = false) async throws -> (run: String, answer: Answer) {
        let created = try await createRun("plain", client: label)
        guard let run = created["run"] as? String, let result = created["result"] as? String,
            let url = (created["urls"] as? [[String: Any]])?.first?["url"] as? String
        else { throw ServiceTestError("plain: no run, URL or result in \(created)") }
        var data = try await download(url)
        if corrupt, !data.isEmpty { data[data.count - 1] ^= 0xFF }
        let answer = try await send(
            "POST", result, json: ["outcome": "success", "outputs": [Self.output(route: "", data)]])
        return (run, answer)
    }
}
