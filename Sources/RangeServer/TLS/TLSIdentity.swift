/// What a TLS listener presents: a certificate chain (leaf first) and the leaf's private key, both PEM.
package struct TLSIdentity: Hashable, Sendable {
    /// The leaf certificate, then any intermediates, PEM.
    package var certificateChainPEM: String
    /// The leaf's private key, PEM.
    package var privateKeyPEM: String

    /// Makes an identity from PEM text.
    package init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}
