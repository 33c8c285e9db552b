import Foundation
import NIOSSL
import X509

/// The TLS of tunnels through a proxy: the same settings as the direct client's (``HTTPTransport/tlsConfiguration(_:)``,
/// the engine's trust), made into NIOSSL contexts once, on the first tunnel.
///
/// Two contexts: one for origins named by a host name, checked by NIOSSL against that name; one for origins named by
/// an IP address, with NIOSSL's name check off and ours on (``names(address:_:)``), since NIOSSL would check the
/// certificate against the channel's peer, the proxy. With ``DownloadConfiguration/TLSTrust/acceptsAnyCertificate``
/// nothing is checked, as on the direct path.
final class ProxyTLS: @unchecked Sendable {
    private let trust: DownloadConfiguration.TLSTrust
    private let lock = NSLock()
    private var contexts: (byName: NIOSSLContext, byAddress: NIOSSLContext)?

    init(trust: DownloadConfiguration.TLSTrust) { self.trust = trust }

    /// The context for a tunnel to `host`, and the address bytes the certificate must name when `host` is an IP
    /// address and certificates are checked.
    ///
    /// - Throws: ``DownloadError/invalidState(_:)`` for trust settings that cannot be used (as the transport's
    ///   creation would have); NIOSSL's error when BoringSSL refuses the settings.
    func context(for host: String) throws -> (context: NIOSSLContext, serverName: String?, address: [UInt8]?) {
        let made = try lock.withLock {
            if let contexts { return contexts }
            let configuration = try HTTPTransport.tlsConfiguration(trust)
            var byAddress = configuration
            if byAddress.certificateVerification == .fullVerification {
                byAddress.certificateVerification = .noHostnameVerification
            }
            let both = (
                byName: try NIOSSLContext(configuration: configuration),
                byAddress: try NIOSSLContext(configuration: byAddress)
            )
            contexts = both
            return both
        }
        guard let address = Self.addressBytes(host) else { return (made.byName, host, nil) }
        return (made.byAddress, nil, trust.acceptsAnyCertificate ? nil : address)
    }

    /// Whether `certificate` names the IP address `address` (4 or 16 bytes) among its subject alternative names,
    /// the only place an address counts (RFC 9110 §4.3.5, as NIOSSL checks it on direct connections).
    static func names(address: [UInt8], _ certificate: NIOSSLCertificate) -> Bool {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der),
            let names = try? parsed.extensions.subjectAlternativeNames
        else { return false }
        return names.contains { name in
            if case .ipAddress(let octets) = name { return Array(octets.bytes) == address }
            return false
        }
    }

    /// The bytes of an IPv4 or IPv6 address in text form; `nil` for a host name.
    static func addressBytes(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
