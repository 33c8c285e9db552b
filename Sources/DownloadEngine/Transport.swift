import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A request as the engine hands it to a transport: always `GET`, never followed.
struct TransportRequest: Sendable {
    var url: String
    var headers: [(name: String, value: String)]
}

/// A response head plus a body to stream.
struct TransportResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: TransportBody

    /// The first value of a header, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name }?.value
    }
}

/// A response body: an async sequence of byte buffers behind a closure, so any transport can provide one.
struct TransportBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    struct AsyncIterator: AsyncIteratorProtocol {
        var nextChunk: () async throws -> ByteBuffer?
        mutating func next() async throws -> ByteBuffer? { try await nextChunk() }
    }

    let make: @Sendable () -> AsyncIterator

    func makeAsyncIterator() -> AsyncIterator { make() }
}

/// The engine's view of HTTP: one request, one streamed response, no redirects, no decompression.
///
/// The engine owns ranges, validators, redirects, retries and persistence; a transport only moves bytes, so another
/// one (URLSession) can be added without touching the resume rules.
protocol Transport: Sendable {
    /// Sends `request` and returns once the response head has arrived.
    func execute(_ request: TransportRequest) async throws -> TransportResponse
    /// Releases connections; the transport is unusable afterwards.
    func shutdown() async
}

/// The AsyncHTTPClient transport: redirects disallowed, decompression off.
final class AsyncHTTPClientTransport: Transport {
    private let client: HTTPClient
    private let lock = NSLock()
    private nonisolated(unsafe) var isShutDown = false

    init(connectTimeout: Duration) {
        let nanoseconds = Int64(connectTimeout.seconds * 1e9)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(nanoseconds), read: nil),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = .GET
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, deadline: .distantFuture)
        } catch {
            throw Self.translate(error, url: request.url)
        }
        let body = response.body
        let url = request.url
        return TransportResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: TransportBody {
                let box = IteratorBox(body.makeAsyncIterator())
                return TransportBody.AsyncIterator {
                    do {
                        return try await box.next()
                    } catch {
                        throw Self.translate(error, url: url)
                    }
                }
            }
        )
    }

    func shutdown() async {
        let first = lock.withLock {
            defer { isShutDown = true }
            return !isShutDown
        }
        if first { try? await client.shutdown() }
    }

    deinit {
        // An engine dropped without `shutdown()` must not trap in HTTPClient's deinit check.
        if !isShutDown { client.shutdown { _ in } }
    }

    static func translate(_ error: any Error, url: String) -> any Error {
        if error is CancellationError || error is DownloadError { return error }
        if let error = error as? HTTPClientError {
            if error == .connectTimeout { return DownloadError.connectTimeout(url) }
            if error == .cancelled { return CancellationError() }
        }
        return DownloadError.network(String(describing: error))
    }
}

/// Holds a body iterator so a `@Sendable` closure can advance it; only one task iterates a body at a time.
private final class IteratorBox: @unchecked Sendable {
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    init(_ iterator: HTTPClientResponse.Body.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> ByteBuffer? { try await iterator.next() }
}
