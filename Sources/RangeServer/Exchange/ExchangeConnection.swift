/// What the router learns of, and asks of, the connection one exchange arrives on, whichever front end carries it.
///
/// One value per exchange, not per socket: a front end that multiplexes exchanges on one connection answers for the
/// exchange (its stream), not for the socket under it. The router never sees a descriptor or a libmicrohttpd
/// handle; the libmicrohttpd front end's answer is `MicroHTTPConnection` (Daemon/).
package protocol ExchangeConnection: Sendable {
    /// Whether and how the peer has left, looked at without reading: nil while it is there.
    var departure: PeerDeparture? { get }

    /// Keeps what the connection buffers ahead of the peer near `bytes`, so that what the journal counts as sent
    /// stays close to what the peer took (see `Router.admit`). A front end with no such buffer does nothing.
    func capBuffering(at bytes: Int)

    /// Why this front end cannot carry out `key` on this exchange, as the end of one line naming the key
    /// (`works on plain HTTP only ...`); nil when it can.
    func refusal(of key: FaultKey) -> String?
}

/// How a peer left a connection.
package enum PeerDeparture: Sendable, Equatable {
    /// In order: its FIN arrived.
    case closed
    /// With a reset, or an error on the socket.
    case reset
}

/// The connection of a request that reached the router without a front end, as the router's tests build them:
/// nobody leaves it, and every key can be carried out on it.
package struct UnattachedConnection: ExchangeConnection {
    /// Makes one.
    package init() {}
    package var departure: PeerDeparture? { nil }
    package func capBuffering(at bytes: Int) {}
    package func refusal(of key: FaultKey) -> String? { nil }
}
