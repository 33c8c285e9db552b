import CMicroHTTPD

/// The libmicrohttpd front end's answer to what the router asks of an exchange's connection: its socket, looked at
/// (never read or written), and what this front end cannot do over TLS.
struct MicroHTTPConnection: ExchangeConnection {
    /// The connection's socket, or -1 when libmicrohttpd did not say.
    let socket: Int32
    /// Whether the connection is on a TLS port (libmicrohttpd's GnuTLS layer between the socket and the bytes).
    let isTLS: Bool

    var departure: PeerDeparture? {
        switch cmhd_peer_departure(socket) {
        case 1: .closed
        case 2: .reset
        default: nil
        }
    }

    func capBuffering(at bytes: Int) {
        if socket >= 0 { _ = cmhd_cap_send_buffer(socket, Int32(clamping: bytes)) }
    }

    func refusal(of key: FaultKey) -> String? {
        // The malformed chunk line is written to the socket past libmicrohttpd, which TLS cannot allow.
        if isTLS && key.name == FaultKey.badChunkAfter.name {
            return "works on plain HTTP only (it writes to the socket past the TLS layer); use the http port"
        }
        if FaultKey.http2Only.contains(key.name) {
            return "works over HTTP/2 only; use the --h2-port or --h2c-port listener"
        }
        return nil
    }
}
