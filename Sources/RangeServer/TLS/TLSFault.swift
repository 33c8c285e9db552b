/// A TLS fault that strikes before any request exists, so it cannot be chosen per request: each is a listener of
/// its own, beside the TLS port (see ``RangeServer/tlsFaultPorts``).
public enum TLSFault: String, CaseIterable, Hashable, Sendable, Comparable {
    /// Reads the ClientHello and answers with a fatal `handshake_failure` alert, then closes.
    case handshakeFail = "handshake-fail"
    /// Accepts the TCP connection and never answers the ClientHello.
    case handshakeStall = "handshake-stall"
    /// Serves a certificate from the server's CA for the right names whose validity ended yesterday.
    case certExpired = "cert-expired"
    /// Serves a valid certificate from the server's CA for another host name only (`wrong-host.invalid`).
    case certWrongHost = "cert-wrong-host"
    /// Serves a certificate for the right names signed by a CA nobody trusts (made afresh at each start).
    case certUntrusted = "cert-untrusted"

    public static func < (left: TLSFault, right: TLSFault) -> Bool {
        allCases.firstIndex(of: left)! < allCases.firstIndex(of: right)!
    }
}
