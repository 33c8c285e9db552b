import Foundation

/// The certificates and keys a server's TLS listeners present, and where the CA a client must trust is kept.
struct TLSMaterial: Sendable {
    /// What the TLS port presents.
    var identity: TLSIdentity
    /// The PEM a client trusts: the CA's certificate, or the given certificate with `--tls-cert`.
    var trustPEM: String
    /// The file holding `trustPEM`.
    var trustPath: String
    /// The directory made for this run, removed when the server stops; nil for `--tls-dir` or `--tls-cert`.
    var temporaryDirectory: String?
    /// The CA that issues the fault listeners' certificates.
    var authority: CertificateAuthority
    /// The names the leaves are issued for.
    var names: [String]

    /// The file names kept in the TLS directory.
    static let authorityFile = "ca.pem"
    static let authorityKeyFile = "ca-key.pem"
    static let serverFile = "server.pem"
    static let serverKeyFile = "server-key.pem"

    /// Loads or makes everything `configuration` asks for.
    ///
    /// Without `tlsCertificateFile`, the CA in `tlsDirectory` (made there on first use, reused afterwards) issues a
    /// leaf for localhost, 127.0.0.1, ::1, the bound host and every `tlsNames` entry; the leaf and its key are written
    /// beside the CA (`server.pem`, `server-key.pem`) for other servers to present the same identity.
    ///
    /// - Throws: ``RangeServerError`` naming the file or the name at fault.
    static func prepare(_ configuration: RangeServer.Configuration, now: Date = Date()) throws -> TLSMaterial {
        var names = ["localhost", "127.0.0.1", "::1"]
        let host = configuration.host
        if host != "0.0.0.0" && host != "::" && !names.contains(host) { names.append(host) }
        for name in configuration.tlsNames {
            guard CertificateAuthority.ipAddressBytes(name) != nil || CertificateAuthority.isHostName(name) else {
                throw RangeServerError.tlsCertificate("--tls-name '\(name)': not a host name or an IP address")
            }
            if !names.contains(name) { names.append(name) }
        }
        if configuration.tlsCertificateFile != nil || configuration.tlsKeyFile != nil {
            guard let certificateFile = configuration.tlsCertificateFile, let keyFile = configuration.tlsKeyFile else {
                throw RangeServerError.tlsCertificate("--tls-cert and --tls-key must be given together")
            }
            let given = try loadPair(certificateFile: certificateFile, keyFile: keyFile)
            // The fault listeners' certificates still come from a CA of ours.
            let (authority, _, temporary) = try authorityDirectory(configuration.tlsDirectory)
            return TLSMaterial(
                identity: given, trustPEM: given.certificateChainPEM, trustPath: certificateFile,
                temporaryDirectory: temporary, authority: authority, names: names)
        }
        let (authority, directory, temporary) = try authorityDirectory(configuration.tlsDirectory)
        let identity = try authority.issue(names: names, notValidBefore: now - 3600, notValidAfter: now + 397 * 86_400)
        try write(identity.certificateChainPEM, to: directory + "/" + serverFile, private: false)
        try write(identity.privateKeyPEM, to: directory + "/" + serverKeyFile, private: true)
        return TLSMaterial(
            identity: identity, trustPEM: authority.certificatePEM, trustPath: directory + "/" + authorityFile,
            temporaryDirectory: temporary, authority: authority, names: names)
    }

    /// The certificate a certificate-fault listener presents; nil for the handshake faults, which present none.
    func identity(for fault: TLSFault, now: Date = Date()) throws -> TLSIdentity? {
        switch fault {
        case .handshakeFail, .handshakeStall:
            return nil
        case .certExpired:
            return try authority.issue(names: names, notValidBefore: now - 30 * 86_400, notValidAfter: now - 86_400)
        case .certWrongHost:
            return try authority.issue(
                names: ["wrong-host.invalid"], notValidBefore: now - 3600, notValidAfter: now + 397 * 86_400)
        case .certUntrusted:
            let stranger = try CertificateAuthority.create(commonName: "rangeserver untrusted CA", now: now)
            return try stranger.issue(names: names, notValidBefore: now - 3600, notValidAfter: now + 397 * 86_400)
        }
    }

    /// The CA kept in `directory` (made and saved there if it has none), or in a new temporary directory.
    private static func authorityDirectory(
        _ directory: String?
    ) throws -> (
        CertificateAuthority, directory: String, temporary: String?
    ) {
        let manager = FileManager.default
        guard let directory else {
            var template = Array((NSTemporaryDirectory() + "/rangeserver-tls-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else {
                throw RangeServerError.tlsCertificate("cannot make a temporary directory for the TLS CA")
            }
            let path = String(cString: made)
            let authority = try CertificateAuthority.create()
            try save(authority, in: path)
            return (authority, path, path)
        }
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw RangeServerError.tlsCertificate("--tls-dir '\(directory)' is not a directory")
            }
        } else {
            do {
                try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw RangeServerError.tlsCertificate("--tls-dir '\(directory)': cannot create it")
            }
        }
        let certificatePath = directory + "/" + authorityFile
        let keyPath = directory + "/" + authorityKeyFile
        let hasCertificate = manager.fileExists(atPath: certificatePath)
        let hasKey = manager.fileExists(atPath: keyPath)
        if hasCertificate || hasKey {
            guard hasCertificate && hasKey else {
                let missing = hasCertificate ? keyPath : certificatePath
                throw RangeServerError.tlsCertificate(
                    "--tls-dir '\(directory)': '\(missing)' is missing (the CA needs both \(authorityFile) and "
                        + "\(authorityKeyFile); remove the other to start afresh)")
            }
            let certificatePEM = try read(certificatePath, option: "--tls-dir")
            let keyPEM = try read(keyPath, option: "--tls-dir")
            do {
                return (try CertificateAuthority(certificatePEM: certificatePEM, privateKeyPEM: keyPEM), directory, nil)
            } catch let error as RangeServerError {
                throw RangeServerError.tlsCertificate("--tls-dir '\(directory)': \(error.message)")
            }
        }
        let authority = try CertificateAuthority.create()
        try save(authority, in: directory)
        return (authority, directory, nil)
    }

    private static func save(_ authority: CertificateAuthority, in directory: String) throws {
        try write(authority.privateKeyPEM, to: directory + "/" + authorityKeyFile, private: true)
        try write(authority.certificatePEM, to: directory + "/" + authorityFile, private: false)
    }

    /// `--tls-cert` and `--tls-key`: both readable PEM, the key belonging to the first certificate.
    private static func loadPair(certificateFile: String, keyFile: String) throws -> TLSIdentity {
        let certificatePEM = try read(certificateFile, option: "--tls-cert")
        let keyPEM = try read(keyFile, option: "--tls-key")
        try CertificateAuthority.checkPair(
            certificatePEM: certificatePEM, certificateFile: certificateFile, keyPEM: keyPEM, keyFile: keyFile)
        return TLSIdentity(certificateChainPEM: certificatePEM, privateKeyPEM: keyPEM)
    }

    private static func read(_ path: String, option: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read it" : "no such file"
            throw RangeServerError.tlsCertificate("\(option) '\(path)': \(reason)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RangeServerError.tlsCertificate("\(option) '\(path)': not PEM text")
        }
        return text
    }

    private static func write(_ text: String, to path: String, private isPrivate: Bool) throws {
        let manager = FileManager.default
        try? manager.removeItem(atPath: path)
        let attributes: [FileAttributeKey: Any] = [.posixPermissions: isPrivate ? 0o600 : 0o644]
        guard manager.createFile(atPath: path, contents: Data(text.utf8), attributes: attributes) else {
            throw RangeServerError.tlsCertificate("cannot write '\(path)'")
        }
    }
}
