import Foundation
import NIOCore

/// The idle kept-alive connections of ``HTTPTransport``, per scheme, host and port, at most `limit` each.
final class HTTPConnectionPool: @unchecked Sendable {
    private let limit: Int
    private let lock = NSLock()
    private var idle: [String: [HTTPConnection]] = [:]
    private var isShutDown = false

    init(limit: Int) { self.limit = max(1, limit) }

    /// A connection under `key` that is still open, if the pool has one.
    func take(_ key: String) -> HTTPConnection? {
        while true {
            guard let connection = lock.withLock({ idle[key]?.popLast() }) else { return nil }
            if connection.channel.isActive { return connection }
            connection.channel.close(promise: nil)
        }
    }

    /// Takes back a connection whose response ended cleanly and which both sides allow to be reused.
    func keep(_ connection: HTTPConnection) {
        let kept = lock.withLock {
            guard !isShutDown, idle[connection.key, default: []].count < limit else { return false }
            idle[connection.key, default: []].append(connection)
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// Closes every idle connection and refuses the ones given back later.
    func shutdown() async {
        let connections = lock.withLock {
            isShutDown = true
            defer { idle = [:] }
            return Array(idle.values.joined())
        }
        for connection in connections { try? await connection.channel.close() }
    }

    /// The number of idle connections (for tests).
    var idleCount: Int { lock.withLock { idle.values.reduce(0) { $0 + $1.count } } }
}
