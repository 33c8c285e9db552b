import Foundation

/// A server's TLS side: the daemon of the TLS port and the fault listeners, with the material they present.
final class TLSListeners: Sendable {
    let material: TLSMaterial
    let daemon: MicroHTTPDaemon
    /// The certificate-fault daemons (`cert-expired`, ...): libmicrohttpd presenting another certificate.
    private let faultDaemons: [TLSFault: MicroHTTPDaemon]
    /// `handshake-fail` and `handshake-stall`.
    private let handshakeListeners: [TLSFault: HandshakeFaultListener]

    /// The open fault listeners' ports.
    var faultPorts: [TLSFault: Int] {
        var ports = faultDaemons.mapValues(\.port)
        for (fault, listener) in handshakeListeners { ports[fault] = listener.port }
        return ports
    }

    private init(
        material: TLSMaterial, daemon: MicroHTTPDaemon, faultDaemons: [TLSFault: MicroHTTPDaemon],
        handshakeListeners: [TLSFault: HandshakeFaultListener]
    ) {
        self.material = material
        self.daemon = daemon
        self.faultDaemons = faultDaemons
        self.handshakeListeners = handshakeListeners
    }

    /// Opens the TLS port and the listeners for `faults`; on failure, closes whatever it opened and rethrows.
    static func start(
        material: TLSMaterial, port: Int, threads: Int, faults: Set<TLSFault>, host: String,
        makeDaemon: (_ port: Int, _ threads: Int, _ tls: TLSIdentity?) throws -> MicroHTTPDaemon
    ) throws -> TLSListeners {
        let daemon = try makeDaemon(port, threads, material.identity)
        var faultDaemons: [TLSFault: MicroHTTPDaemon] = [:]
        var handshakeListeners: [TLSFault: HandshakeFaultListener] = [:]
        do {
            for fault in faults.sorted() {
                if let identity = try material.identity(for: fault) {
                    // A client that gets through is served like on the TLS port; one thread is plenty for a fault.
                    faultDaemons[fault] = try makeDaemon(0, 1, identity)
                } else {
                    handshakeListeners[fault] = try HandshakeFaultListener(fault: fault, host: host, port: 0)
                }
            }
        } catch {
            daemon.stop()
            for faultDaemon in faultDaemons.values { faultDaemon.stop() }
            for listener in handshakeListeners.values { listener.stop() }
            throw error
        }
        return TLSListeners(
            material: material, daemon: daemon, faultDaemons: faultDaemons, handshakeListeners: handshakeListeners)
    }

    /// Closes every listener and removes a temporary TLS directory.
    func stop() {
        daemon.stop()
        for faultDaemon in faultDaemons.values { faultDaemon.stop() }
        for listener in handshakeListeners.values { listener.stop() }
        if let directory = material.temporaryDirectory { Self.removeDirectory(directory) }
    }

    static func removeDirectory(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
