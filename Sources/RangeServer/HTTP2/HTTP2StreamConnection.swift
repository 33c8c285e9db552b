import Synchronization

/// What the router learns of, and asks of, one HTTP/2 stream (see ``ExchangeConnection``): whether its client has
/// left it, and which keys this front end cannot carry out.
final class HTTP2StreamConnection: ExchangeConnection {
    /// 0 while the stream is open, 1 once the client closed it in order (END_STREAM read, or the connection closed
    /// in order), 2 once it reset the stream or the connection broke.
    private let state = Atomic<UInt8>(0)

    var departure: PeerDeparture? {
        switch state.load(ordering: .acquiring) {
        case 1: .closed
        case 2: .reset
        default: nil
        }
    }

    /// Notes how the client left; the first note stands.
    func left(_ departure: PeerDeparture) {
        _ = state.compareExchange(expected: 0, desired: departure == .reset ? 2 : 1, ordering: .releasing)
    }

    /// Flow control, not a socket buffer, bounds what a stream holds ahead of its client: nothing to cap here.
    func capBuffering(at bytes: Int) {}

    func refusal(of key: FaultKey) -> String? {
        guard FaultKey.http1Only.contains(key.name) else { return nil }
        if key.name == FaultKey.tlsTruncateAfter.name {
            return "works over HTTP/1.1 only (a TLS truncation would end every stream of the connection without a "
                + "frame); use the --tls-port listener"
        }
        return "works over HTTP/1.1 only (HTTP/2 has no chunked framing, RFC 9113 §8.2.2); use the http or https port"
    }
}
