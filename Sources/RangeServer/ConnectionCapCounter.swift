import NIOConcurrencyHelpers

/// Counts the responses in progress per (peer address, request target) for `connection-cap`: a server or CDN that
/// allows each client only so many concurrent transfers of one URL and answers the rest with 503.
///
/// Only requests carrying `connection-cap` come here, so the lock costs the rest nothing. An entry lives while a
/// response holds it, so the table is bounded by the open connections.
final class ConnectionCapCounter: Sendable {
    private let inProgress = NIOLockedValueBox<[String: Int]>([:])

    /// The key of a request: the peer's address (not its port: each connection has its own) and the target as
    /// received, path and query.
    static func key(peerAddress: String, target: String) -> String {
        peerAddress + " " + target
    }

    /// Takes one of `limit` slots for `key`; false when all are taken.
    func acquire(_ key: String, limit: Int) -> Bool {
        inProgress.withLockedValue { counts in
            let held = counts[key, default: 0]
            guard held < limit else { return false }
            counts[key] = held + 1
            return true
        }
    }

    /// Gives back a slot taken by ``acquire(_:limit:)``, when its response has ended however it ended.
    func release(_ key: String) {
        inProgress.withLockedValue { counts in
            guard let held = counts[key] else { return }
            counts[key] = held > 1 ? held - 1 : nil
        }
    }

    /// The slots held for `key` now (for tests).
    func held(_ key: String) -> Int {
        inProgress.withLockedValue { $0[key, default: 0] }
    }
}
