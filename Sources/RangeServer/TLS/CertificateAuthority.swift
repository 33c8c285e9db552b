import Crypto
import Foundation
import SwiftASN1
import X509

/// A throwaway certificate authority for the TLS port: it issues the leaf certificates the server presents, and a
/// client (a test, a phone, a simulator) trusts its certificate once.
///
/// Keys are ECDSA P-256 and certificates carry what strict verifiers ask for (Python's `VERIFY_X509_STRICT`, Apple's
/// rules for TLS server certificates): subject alternative names, `serverAuth`, key identifiers, and a leaf validity
/// of at most 397 days.
package struct CertificateAuthority: Sendable {
    /// The CA certificate, PEM: what a client adds to its trust store.
    public let certificatePEM: String
    /// The CA's private key, PEM (PKCS #8).
    public let privateKeyPEM: String

    let certificate: Certificate
    private let key: Certificate.PrivateKey

    /// Makes a new CA, valid from a day ago for ten years.
    ///
    /// - Parameters:
    ///   - commonName: the CA's name; a random suffix keeps two CAs on one device apart.
    ///   - now: the current time.
    public static func create(
        commonName: String = "rangeserver test CA", now: Date = Date()
    ) throws
        -> CertificateAuthority
    {
        let key = P256.Signing.PrivateKey()
        let suffix = (0..<4).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let name = try DistinguishedName {
            OrganizationName("rangeserver")
            CommonName("\(commonName) \(suffix)")
        }
        let publicKey = Certificate.PublicKey(key.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(keyIdentifier: keyIdentifier(publicKey))
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now - 86_400, notValidAfter: now + 10 * 365 * 86_400, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: .init(key))
        return try CertificateAuthority(certificate: certificate, key: .init(key))
    }

    /// Loads a CA from its certificate and private key (PEM).
    ///
    /// - Throws: ``RangeServerError`` when either is not PEM of its kind, the key is not P-256, or they do not belong
    ///   together.
    public init(certificatePEM: String, privateKeyPEM: String) throws {
        let certificate: Certificate
        let key: Certificate.PrivateKey
        do {
            certificate = try Certificate(pemEncoded: certificatePEM)
        } catch {
            throw RangeServerError.tlsCertificate("the CA certificate is not a PEM certificate")
        }
        do {
            key = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw RangeServerError.tlsCertificate("the CA key is not a PEM private key")
        }
        try self.init(certificate: certificate, key: key)
    }

    private init(certificate: Certificate, key: Certificate.PrivateKey) throws {
        guard certificate.publicKey == key.publicKey else {
            throw RangeServerError.tlsCertificate("the CA key does not belong to the CA certificate")
        }
        self.certificate = certificate
        self.key = key
        self.certificatePEM = try certificate.serializeAsPEM().pemString + "\n"
        self.privateKeyPEM = try key.serializeAsPEM().pemString + "\n"
    }

    /// Issues a server certificate for `names` with a new key.
    ///
    /// - Parameters:
    ///   - names: DNS names and IP addresses (IPv4 or IPv6, without brackets); the first is the subject's common name.
    ///   - notValidBefore: the start of its validity.
    ///   - notValidAfter: the end of its validity.
    /// - Returns: the leaf (alone: clients trust the CA itself) and its key.
    /// - Throws: ``RangeServerError`` for an empty list or a name that is neither a host name nor an IP address.
    public func issue(names: [String], notValidBefore: Date, notValidAfter: Date) throws -> TLSIdentity {
        guard let first = names.first else {
            throw RangeServerError.tlsCertificate("a certificate needs at least one name")
        }
        var alternatives: [GeneralName] = []
        for name in names {
            if let address = Self.ipAddressBytes(name) {
                alternatives.append(.ipAddress(ASN1OctetString(contentBytes: address[...])))
            } else if Self.isHostName(name) {
                alternatives.append(.dnsName(name))
            } else {
                throw RangeServerError.tlsCertificate(
                    "--tls-name '\(name)': not a host name or an IP address")
            }
        }
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let authorityKeyID = Self.keyIdentifier(certificate.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(alternatives)
            SubjectKeyIdentifier(keyIdentifier: Self.keyIdentifier(publicKey))
            AuthorityKeyIdentifier(keyIdentifier: authorityKeyID)
        }
        let subject = try DistinguishedName {
            OrganizationName("rangeserver")
            CommonName(first)
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: notValidBefore, notValidAfter: notValidAfter, issuer: certificate.subject,
            subject: subject, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: self.key)
        return TLSIdentity(
            certificateChainPEM: try leaf.serializeAsPEM().pemString + "\n", privateKeyPEM: key.pemRepresentation)
    }

    /// A key identifier the usual way (RFC 5280 §4.2.1.2, method 1): the SHA-1 of the public key's bits.
    private static func keyIdentifier(_ key: Certificate.PublicKey) -> ArraySlice<UInt8> {
        ArraySlice(Insecure.SHA1.hash(data: Array(key.subjectPublicKeyInfoBytes)))
    }

    /// The address's bytes (4 or 16) when `name` is a numeric IPv4 or IPv6 address.
    static func ipAddressBytes(_ name: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }

    /// Whether `name` is a DNS name a certificate can carry: labels of letters, digits and `-`, optionally a leading
    /// `*.` wildcard label.
    static func isHostName(_ name: String) -> Bool {
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*" && labels.count > 2 { labels.removeFirst() }
        guard !labels.isEmpty, name.utf8.count <= 253 else { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D
                }
        }
    }
}

extension CertificateAuthority {
    /// Checks that `keyPEM` is a private key and `certificatePEM` starts with the certificate it belongs to.
    ///
    /// - Throws: ``RangeServerError`` naming the file at fault.
    static func checkPair(certificatePEM: String, certificateFile: String, keyPEM: String, keyFile: String) throws {
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: Self.firstPEMBlock(certificatePEM) ?? certificatePEM)
        } catch {
            throw RangeServerError.tlsCertificate("--tls-cert '\(certificateFile)': not a PEM certificate")
        }
        let key: Certificate.PrivateKey
        do {
            key = try Certificate.PrivateKey(pemEncoded: keyPEM)
        } catch {
            throw RangeServerError.tlsCertificate("--tls-key '\(keyFile)': not a PEM private key")
        }
        guard key.publicKey == certificate.publicKey else {
            throw RangeServerError.tlsCertificate(
                "--tls-key '\(keyFile)' does not belong to the certificate in --tls-cert '\(certificateFile)'")
        }
    }

    /// The first `-----BEGIN ...-----` to `-----END ...-----` block of a PEM file (a chain holds several).
    private static func firstPEMBlock(_ text: String) -> String? {
        guard let begin = text.range(of: "-----BEGIN "),
            let end = text.range(of: "-----END ", range: begin.upperBound..<text.endIndex),
            let close = text.range(of: "-----", range: end.upperBound..<text.endIndex)
        else { return nil }
        return String(text[begin.lowerBound..<close.upperBound])
    }
}
