/// What a TLS listener presents: a certificate chain (leaf first) and the leaf's private key, both PEM.
public struct TLSIdentity: Hashable, Sendable {
    /// The leaf certificate, then any intermediates, PEM.
    public var certificateChainPEM: String
    /// The leaf's private key, PEM.
    public var privateKeyPEM: String

    /// Makes an identity from PEM text.
    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}
