import AsyncHTTPClient
import Foundation
import NIOSSL

/// The transport's TLS: the client settings built from ``DownloadConfiguration/TLSTrust``, and what each TLS
/// failure becomes for the engine.
extension HTTPTransport {
    /// The TLS settings for `https://`: the configured trust (AsyncHTTPClient sets the ALPN protocols from its
    /// `httpVersion`: `h2` and `http/1.1`, or `http/1.1` alone).
    ///
    /// - Throws: ``DownloadError/invalidState(_:)`` naming the certificate or the CA file that cannot be used.
    static func tlsConfiguration(_ trust: DownloadConfiguration.TLSTrust) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2", "http/1.1"]
        // When the engine closes a connection (a pause, a cancel, a body it no longer wants) it sends close_notify
        // and closes TCP at once. NIOSSL's default waits up to 5 s for the server's close_notify, reading, and
        // discarding, whatever the server still sends: a paused 4 MiB download over TLS received all of it for
        // nothing, where over http:// the server saw the close at its next write.
        tls.shutdownTimeout = .zero
        if trust.acceptsAnyCertificate {
            tls.certificateVerification = .none
            return tls
        }
        var certificates: [NIOSSLCertificate] = []
        for (index, pem) in trust.additionalCertificatesPEM.enumerated() {
            certificates += try pemCertificates(Array(pem.utf8), "trusted certificate \(index + 1)")
        }
        for file in trust.additionalCertificateFiles {
            guard let bytes = FileManager.default.contents(atPath: file) else {
                let reason = FileManager.default.fileExists(atPath: file) ? "cannot read it" : "no such file"
                throw DownloadError.invalidState("CA file '\(file)': \(reason)")
            }
            certificates += try pemCertificates(Array(bytes), "CA file '\(file)'")
        }
        // Beside the system's roots, not instead of them: a company CA must not make public sites fail.
        if !certificates.isEmpty { tls.additionalTrustRoots = [.certificates(certificates)] }
        return tls
    }

    /// The certificates in `bytes`, at least one.
    private static func pemCertificates(_ bytes: [UInt8], _ what: String) throws -> [NIOSSLCertificate] {
        // NIOSSL returns an empty list, not an error, for text without any PEM block.
        guard let found = try? NIOSSLCertificate.fromPEMBytes(bytes), !found.isEmpty else {
            throw DownloadError.invalidState("\(what): no PEM certificate in it")
        }
        return found
    }

    /// The engine's error for a TLS failure reported by AsyncHTTPClient or NIOSSL; nil when `error` is not one.
    ///
    /// - A certificate that does not verify or is for another name: ``DownloadError/tlsCertificate(_:_:)``,
    ///   permanent, since asking again gets the same certificate.
    /// - A handshake the server aborts (an alert, no common version or cipher):
    ///   ``DownloadError/tlsHandshake(_:_:)``, retried.
    /// - No handshake within the connect timeout: ``DownloadError/tlsHandshakeTimeout(_:)``, a connect timeout.
    /// - TCP closed without close_notify: a network error, retried from the offset; the body it ended is never
    ///   complete.
    static func translateTLS(_ error: any Error, url: String, peer: String) -> DownloadError? {
        switch error {
        case let error as HTTPClientError where error == .tlsHandshakeTimeout:
            // AsyncHTTPClient's connect deadline covers the TCP connect and the handshake together.
            return .tlsHandshakeTimeout(url)
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            // Checked by NIOSSL after BoringSSL accepted the chain, against the URL's host name or IP address.
            return .tlsCertificate(peer, "it is not for this host name")
        case NIOSSLError.noCertificateToValidate, NIOSSLError.unableToValidateCertificate:
            return .tlsCertificate(peer, "\(error)")
        case NIOSSLError.handshakeFailed(let failure):
            let reasons = boringSSLReasons(failure)
            // BoringSSL's error stack names only the outcome of verification, not its reason (expired, unknown
            // issuer, ...); those are in the verify result, which AsyncHTTPClient does not expose.
            if reasons.contains("CERTIFICATE_VERIFY_FAILED") {
                return .tlsCertificate(peer, "it did not verify: expired, not yet valid, or not from a trusted CA")
            }
            return .tlsHandshake(peer, reasons.isEmpty ? "\(failure)" : reasons.joined(separator: ", "))
        case NIOSSLError.uncleanShutdown:
            return .network("connection to \(peer) ended without TLS close_notify (truncated)")
        default:
            return nil
        }
    }

    /// The reason names in a BoringSSL error stack (`CERTIFICATE_VERIFY_FAILED`, `SSLV3_ALERT_HANDSHAKE_FAILURE`):
    /// each entry reads `Error: CODE error:HEX:LIBRARY:FUNCTION:REASON at FILE:LINE`.
    static func boringSSLReasons(_ failure: BoringSSLError) -> [String] {
        let stack: NIOBoringSSLErrorStack
        switch failure {
        case .sslError(let errors), .unknownError(let errors), .invalidSNIName(let errors),
            .failedToSetALPN(let errors):
            stack = errors
        default:
            return ["\(failure)"]
        }
        return stack.compactMap { entry in
            let text = "\(entry)"
            guard let start = text.range(of: "error:") else { return nil }
            let fields = text[start.upperBound...].split(separator: ":", maxSplits: 3)
            guard fields.count == 4 else { return nil }
            let reason = fields[3].prefix { $0 != " " }
            return reason.isEmpty ? nil : String(reason)
        }
    }
}

extension DownloadConfiguration.TLSTrust {
    /// Checks that every CA given can be used: each file exists and holds PEM certificates, each PEM text parses;
    /// also with ``acceptsAnyCertificate``, which makes them unused but not less wrong.
    ///
    /// An engine made with unusable trust fails at creation with the same error; this lets a command line say so
    /// before anything else.
    ///
    /// - Throws: ``DownloadError/invalidState(_:)`` naming the first file or certificate that cannot be used.
    public func check() throws {
        var verifying = self
        verifying.acceptsAnyCertificate = false
        _ = try HTTPTransport.tlsConfiguration(verifying)
    }
}
