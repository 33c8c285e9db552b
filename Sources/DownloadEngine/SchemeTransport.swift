import Foundation

/// Routes each request by its URL's scheme: `http://` to ``SocketTransport``, `https://` to
/// ``AsyncHTTPClientTransport``, created on the first `https://` request (an engine that never fetches one never
/// starts its event loops).
final class SchemeTransport: Transport, @unchecked Sendable {
    private let plain: SocketTransport
    private let makeSecure: @Sendable () -> any Transport
    private let lock = NSLock()
    private var secure: (any Transport)?
    private var isShutDown = false

    init(plain: SocketTransport, secure: @escaping @Sendable () -> any Transport) {
        self.plain = plain
        self.makeSecure = secure
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        if HTTPTarget.hasPlainScheme(request.url) { return try await plain.execute(request) }
        let transport: (any Transport)? = lock.withLock {
            guard !isShutDown else { return nil }
            if secure == nil { secure = makeSecure() }
            return secure
        }
        guard let transport else { throw DownloadError.invalidState("the engine is shut down") }
        return try await transport.execute(request)
    }

    func shutdown() async {
        let secure = lock.withLock {
            isShutDown = true
            return self.secure
        }
        await plain.shutdown()
        await secure?.shutdown()
    }
}
