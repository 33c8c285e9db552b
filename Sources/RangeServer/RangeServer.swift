import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 range-download test server on libmicrohttpd, embeddable in tests.
///
/// ```swift
/// try await withRangeServer { server in
///     let url = server.baseURL + "/bytes/1M?drop-after=300K"
///     // ... run the client under test, then read server.journal.entries()
/// }
/// ```
public final class RangeServer: Sendable {
    /// Settings for one server; every field has a default suitable for tests.
    public struct Configuration: Sendable {
        /// The numeric address to bind (`127.0.0.1`, `::1`, `0.0.0.0`).
        public var host = "127.0.0.1"
        /// The port; 0 picks a free one (read it back from ``RangeServer/port``).
        public var port = 0
        /// The directory served under `/files/`.
        public var root = "fixtures/files"
        /// The directory of scenario JSON files; nil serves no scenarios (unless ``scenarios`` are given).
        public var scenariosDirectory: String? = nil
        /// Scenarios already parsed, by name: a harness that loaded the catalogue hands it over, and the server serves
        /// these without reading ``scenariosDirectory`` again (which then only names where they came from).
        public var scenarios: [String: Scenario]? = nil
        /// More ranges than this in one Range header are ignored (200), as a defence against range floods.
        public var maxRanges = 64
        /// libmicrohttpd's thread pool size.
        public var threads = 4
        /// The most simultaneous connections.
        public var connectionLimit = 4096
        /// Idle connections are closed after this many seconds (0: never).
        public var connectionTimeout = 60
        /// Each connection's memory, in bytes, for the request line and header fields with the response header
        /// behind them (libmicrohttpd's connection pool): a request whose header does not fit is answered 431.
        /// libmicrohttpd zeroes it before every request on a kept-alive connection, so a larger pool costs every
        /// request; raise it to test clients that send very large header fields (from 8 KiB to 16 MiB).
        public var connectionMemory = MicroHTTPDaemon.defaultConnectionMemory
        /// The values ``connectionMemory`` may take.
        public static let connectionMemoryRange = MicroHTTPDaemon.connectionMemoryRange
        /// How many journal entries are kept in memory; older ones are dropped and counted.
        public var journalLimit = 100_000
        /// When set, every journal entry is appended to this file as a JSON line.
        public var journalFile: String? = nil
        /// When set, `/_control/` requires `Authorization: Bearer <token>` from every peer.
        public var controlToken: String? = nil
        /// When set, also open a listener on this port (0 picks one) that never accepts, so a connect to it hangs
        /// (see ``RangeServer/blackholePort``). Without it, one is opened on a free port when a loaded scenario
        /// redirects to `blackhole:`.
        public var blackholePort: Int? = nil
        /// Also open a listener on `[::1]` at the plain port that never accepts, beside the server on an IPv4
        /// ``host``: a name resolving to `::1` and `127.0.0.1` then has a dead IPv6 address and a live IPv4 one (see
        /// ``RangeServer/deadIPv6Port``). The start fails, naming the address, when `[::1]` at that port is taken.
        public var deadIPv6 = false
        /// When set, also serve HTTPS on this port (0 picks one; read it back from ``RangeServer/tlsPort``). Without
        /// it, a TLS port is opened on a free port when a loaded scenario redirects to `https:` or `tls:`.
        public var tlsPort: Int? = nil
        /// When set, also serve HTTP/2 over TLS on this port (0 picks one; read it back from ``RangeServer/h2Port``),
        /// with the TLS port's CA and certificate; ALPN offers `h2` and `http/1.1`, and a client that chooses
        /// `http/1.1` gets 421.
        public var h2Port: Int? = nil
        /// When set, also serve cleartext HTTP/2 with prior knowledge on this port (0 picks one; read it back from
        /// ``RangeServer/h2cPort``).
        public var h2cPort: Int? = nil
        /// Where the throwaway CA is kept (`ca.pem` and `ca-key.pem`, made on first use and reused, so a device
        /// trusts it once), with the leaf the TLS port presents (`server.pem`, `server-key.pem`). Nil: a new
        /// temporary directory, removed when the server stops.
        public var tlsDirectory: String? = nil
        /// More names (host names or IP addresses) for the leaf, beside localhost, 127.0.0.1, ::1 and ``host``: the
        /// LAN address a phone uses, an emulator's 10.0.2.2.
        public var tlsNames: [String] = []
        /// A certificate (PEM, leaf first) to present instead of one from the CA; needs ``tlsKeyFile``.
        public var tlsCertificateFile: String? = nil
        /// The private key (PEM) of ``tlsCertificateFile``.
        public var tlsKeyFile: String? = nil
        /// Open a listener for every ``TLSFault`` (see ``RangeServer/tlsFaultPorts``). Without it, only the faults a
        /// loaded scenario redirects to are opened.
        public var tlsFaults = false
        /// Where the access log (one `info` message per request, with its fields as metadata) goes. The default
        /// discards everything, so an embedding test is silent unless it passes a logger of its own.
        public var logger = Logger(label: "rangeserver", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Routes the embedder answers itself, checked in order before the server's own (see ``CustomRoute``).
        public var customRoutes: [CustomRoute] = []
        /// How much per-run state is kept: the attempt count of each (scenario, run, route) and the draw count of each
        /// `probability` target. A count unused for ``Retention/idleExpiry`` is forgotten, and beyond
        /// ``Retention/limit`` the least recently used one is; a run whose count was forgotten starts again at
        /// attempt 1. The default keeps 100,000 counts for an hour each (`--run-limit`, `--run-expiry`).
        public var runRetention = Retention.runs
        /// The time the run bounds are measured with; a test replaces it to expire runs without waiting.
        public var clock: @Sendable () -> ContinuousClock.Instant = { .now }

        /// A configuration with every default.
        public init() {}
    }

    /// The configuration the server was started with (with the real port).
    public let configuration: Configuration
    /// The request journal.
    public let journal: Journal
    /// The loaded scenarios by name.
    public let scenarios: [String: Scenario]
    private let daemon: NIOLockedValueBox<MicroHTTPDaemon?>
    private let blackhole: NIOLockedValueBox<BlackholeListener?>
    private let deadIPv6Listener: NIOLockedValueBox<BlackholeListener?>
    private let tls: NIOLockedValueBox<TLSListeners?>
    private let http2: NIOLockedValueBox<[HTTP2Listener]>

    /// The HTTP/2-over-TLS port; nil when the server serves none.
    public let h2Port: Int?
    /// The cleartext HTTP/2 (prior knowledge) port; nil when the server serves none.
    public let h2cPort: Int?

    /// `https://HOST:PORT` of the HTTP/2 TLS port; nil without it.
    public var h2BaseURL: String? {
        h2Port.map { "https://\(bracketedHost):\($0)" }
    }

    /// `http://HOST:PORT` of the cleartext HTTP/2 port; nil without it.
    public var h2cBaseURL: String? {
        h2cPort.map { "http://\(bracketedHost):\($0)" }
    }

    /// The TLS port; nil when the server serves no HTTPS.
    public let tlsPort: Int?
    /// The PEM a client must trust to reach the TLS port: the CA's certificate, or the certificate given with
    /// ``Configuration/tlsCertificateFile``. Nil without TLS.
    public let certificateAuthorityPEM: String?
    /// The file holding ``certificateAuthorityPEM`` (`ca.pem` in the TLS directory, or the given certificate file).
    public let certificateAuthorityPath: String?
    /// The ports of the open TLS fault listeners, on the same host.
    public let tlsFaultPorts: [TLSFault: Int]

    /// `https://HOST:PORT` of the TLS port, with IPv6 hosts in brackets; nil without TLS.
    public var tlsBaseURL: String? {
        tlsPort.map { "https://\(bracketedHost):\($0)" }
    }

    /// `https://HOST:PORT` of a TLS fault listener; nil when it is not open.
    public func tlsFaultBaseURL(_ fault: TLSFault) -> String? {
        tlsFaultPorts[fault].map { "https://\(bracketedHost):\($0)" }
    }

    private var bracketedHost: String {
        configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
    }

    /// The port of the listener that never accepts (`--blackhole-port`), on the same host; nil when there is none.
    /// A client's connect to it hangs until the client's own connect timeout.
    public let blackholePort: Int?

    /// The port at which `[::1]` never accepts while the server answers on its IPv4 host (``Configuration/deadIPv6``):
    /// the plain port, or nil when there is no such listener.
    public let deadIPv6Port: Int?

    /// How many connection attempts `[::1]` at ``deadIPv6Port`` has dropped so far (each SYN, retransmissions
    /// included), counted by the kernel on the listening socket; nil without that listener, once the server stopped,
    /// or where the system keeps no such count (it does on Linux). A client that tried the dead address raised it.
    public var deadIPv6DroppedConnects: Int? { deadIPv6Listener.withLockedValue { $0?.droppedConnects } }

    /// The bound port.
    public var port: Int { configuration.port }

    /// `http://HOST:PORT`, with IPv6 hosts in brackets.
    public var baseURL: String {
        "http://\(bracketedHost):\(configuration.port)"
    }

    private init(
        configuration: Configuration, journal: Journal, scenarios: [String: Scenario], daemon: MicroHTTPDaemon,
        blackhole: BlackholeListener?, deadIPv6: BlackholeListener?, tls: TLSListeners?, http2: [HTTP2Listener]
    ) {
        self.http2 = NIOLockedValueBox(http2)
        self.h2Port = http2.first(where: \.isTLS)?.port
        self.h2cPort = http2.first(where: { !$0.isTLS })?.port
        self.configuration = configuration
        self.deadIPv6Listener = NIOLockedValueBox(deadIPv6)
        self.deadIPv6Port = deadIPv6?.port
        self.journal = journal
        self.scenarios = scenarios
        self.daemon = NIOLockedValueBox(daemon)
        self.blackhole = NIOLockedValueBox(blackhole)
        self.blackholePort = blackhole?.port
        self.tls = NIOLockedValueBox(tls)
        self.tlsPort = tls?.daemon.port
        self.certificateAuthorityPEM = tls?.material.trustPEM
        self.certificateAuthorityPath = tls?.material.trustPath
        self.tlsFaultPorts = tls?.faultPorts ?? [:]
    }

    /// Starts a server.
    ///
    /// - Parameter configuration: the settings; port 0 binds a free port.
    /// - Returns: the running server. Call ``stop()`` when done.
    /// - Throws: ``RangeServerError`` naming the culprit: a missing root, a malformed scenario file, a port in use.
    public static func start(_ configuration: Configuration = Configuration()) throws -> RangeServer {
        guard configuration.maxRanges >= 1 else {
            throw RangeServerError.invalidConfiguration(
                "--max-ranges must be at least 1, got \(configuration.maxRanges)")
        }
        guard configuration.threads >= 1 && configuration.threads <= 256 else {
            throw RangeServerError.invalidConfiguration("--threads must be from 1 to 256, got \(configuration.threads)")
        }
        if let blackholePort = configuration.blackholePort, !(0...65535).contains(blackholePort) {
            throw RangeServerError.invalidConfiguration(
                "--blackhole-port must be from 0 to 65535, got \(blackholePort)")
        }
        if let tlsPort = configuration.tlsPort, !(0...65535).contains(tlsPort) {
            throw RangeServerError.invalidConfiguration("--tls-port must be from 0 to 65535, got \(tlsPort)")
        }
        if let h2Port = configuration.h2Port, !(0...65535).contains(h2Port) {
            throw RangeServerError.invalidConfiguration("--h2-port must be from 0 to 65535, got \(h2Port)")
        }
        if let h2cPort = configuration.h2cPort, !(0...65535).contains(h2cPort) {
            throw RangeServerError.invalidConfiguration("--h2c-port must be from 0 to 65535, got \(h2cPort)")
        }
        guard configuration.journalLimit >= 1 else {
            throw RangeServerError.invalidConfiguration(
                "--journal-limit must be at least 1, got \(configuration.journalLimit)")
        }
        if let problem = configuration.runRetention.problem() {
            throw RangeServerError.invalidConfiguration(problem)
        }
        guard MicroHTTPDaemon.connectionMemoryRange.contains(configuration.connectionMemory) else {
            throw RangeServerError.invalidConfiguration(
                "--connection-memory must be from 8K to 16M, got \(configuration.connectionMemory) bytes")
        }
        var info = stat()
        guard let rootPath = realPath(configuration.root), stat(rootPath, &info) == 0,
            (info.st_mode & S_IFMT) == S_IFDIR
        else {
            throw RangeServerError.missingRoot(
                "root directory '\(configuration.root)' does not exist or is not a directory")
        }
        let scenarios =
            try configuration.scenarios ?? configuration.scenariosDirectory.map { try Scenario.loadDirectory($0) }
            ?? [:]
        let journal = try Journal(limit: configuration.journalLimit, filePath: configuration.journalFile)

        var running = configuration
        let router = Router(configuration: configuration, rootPath: rootPath, scenarios: scenarios, journal: journal)
        let pipeline = RequestPipeline(router: router, journal: journal, logger: configuration.logger)
        let counters = DaemonCounters()
        // Only a custom route keeps a request body.
        var bodyLimit: MicroHTTPDaemon.BodyLimit?
        if !configuration.customRoutes.isEmpty { bodyLimit = { @Sendable target in router.bodyLimit(for: target) } }
        // Every daemon of the server (the plain port, the TLS port, the certificate-fault ports) answers alike.
        func makeDaemon(port: Int, threads: Int, tls: TLSIdentity?) throws -> MicroHTTPDaemon {
            try MicroHTTPDaemon(
                host: configuration.host, port: port, threads: threads,
                connectionLimit: configuration.connectionLimit, connectionTimeout: configuration.connectionTimeout,
                connectionMemory: configuration.connectionMemory,
                handler: { pipeline.plan(for: $0) },
                bodyLimit: bodyLimit,
                completion: { pipeline.complete($0) },
                admission: { pipeline.admit(method: $0, target: $1, connection: $2, takeArrival: $3) },
                openExchanges: journal.openExchanges,
                counters: counters, tls: tls
            )
        }
        let needed = scenarios.values.reduce(into: Set<ScenarioRedirect.Kind>()) { $0.formUnion($1.redirectListeners) }
        // Made before any port opens, so a bad certificate or name fails the start with nothing to undo.
        let material: TLSMaterial? =
            configuration.tlsPort != nil || configuration.h2Port != nil || configuration.tlsFaults
                || needed.contains(where: { $0.scheme == "https" })
            ? try TLSMaterial.prepare(configuration) : nil
        let daemon = try makeDaemon(port: configuration.port, threads: configuration.threads, tls: nil)
        running.port = daemon.port
        router.boundPort.store(daemon.port, ordering: .relaxed)
        var blackhole: BlackholeListener?
        var deadIPv6: BlackholeListener?
        var tls: TLSListeners?
        var http2: [HTTP2Listener] = []
        do {
            if configuration.deadIPv6 {
                deadIPv6 = try BlackholeListener(host: "::1", port: daemon.port, option: "deadIPv6")
            }
            if configuration.blackholePort != nil || needed.contains(.blackhole) {
                blackhole = try BlackholeListener(host: configuration.host, port: configuration.blackholePort ?? 0)
                router.blackholePort.store(blackhole!.port, ordering: .relaxed)
            }
            if let material {
                let faults =
                    configuration.tlsFaults
                    ? Set(TLSFault.allCases)
                    : Set(needed.compactMap { if case .tlsFault(let fault) = $0 { fault } else { nil } })
                tls = try TLSListeners.start(
                    material: material, port: configuration.tlsPort ?? 0, threads: configuration.threads,
                    faults: faults, host: configuration.host, makeDaemon: makeDaemon)
                router.tlsPort.store(tls!.daemon.port, ordering: .relaxed)
                router.tlsFaultPorts.withLockedValue { ports in
                    for (fault, port) in tls!.faultPorts { ports[fault.rawValue] = port }
                }
            }
            // The HTTP/2 listeners answer through the same pipeline, counters and open-exchange table.
            if let h2Port = configuration.h2Port, let material {
                http2.append(
                    try HTTP2Listener(
                        host: configuration.host, port: h2Port, tls: material.identity, pipeline: pipeline,
                        counters: counters, openExchanges: journal.openExchanges, bodyLimit: bodyLimit))
            }
            if let h2cPort = configuration.h2cPort {
                http2.append(
                    try HTTP2Listener(
                        host: configuration.host, port: h2cPort, tls: nil, pipeline: pipeline, counters: counters,
                        openExchanges: journal.openExchanges, bodyLimit: bodyLimit))
            }
        } catch {
            for listener in http2 { listener.stop() }
            tls?.stop()
            daemon.stop()
            blackhole = nil
            deadIPv6 = nil
            if let directory = material?.temporaryDirectory { TLSListeners.removeDirectory(directory) }
            throw error
        }
        return RangeServer(
            configuration: running, journal: journal, scenarios: scenarios, daemon: daemon, blackhole: blackhole,
            deadIPv6: deadIPv6, tls: tls, http2: http2)
    }

    /// Stops the server: open connections are closed, stalled ones included. Safe to call twice.
    public func stop() {
        let daemon = self.daemon.withLockedValue { daemon in
            defer { daemon = nil }
            return daemon
        }
        daemon?.stop()
        blackhole.withLockedValue { $0 = nil }
        deadIPv6Listener.withLockedValue { $0 = nil }
        let tls = self.tls.withLockedValue { tls in
            defer { tls = nil }
            return tls
        }
        tls?.stop()
        let http2 = self.http2.withLockedValue { listeners in
            defer { listeners.removeAll() }
            return listeners
        }
        for listener in http2 { listener.stop() }
    }
}

/// Runs `body` with a server started from `configuration`, and stops the server afterwards, whether
/// `body` returned or threw.
///
/// - Parameters:
///   - configuration: the settings; the default binds a free loopback port.
///   - body: the test, given the running server.
/// - Returns: what `body` returned.
public func withRangeServer<T>(
    _ configuration: RangeServer.Configuration = RangeServer.Configuration(),
    _ body: (RangeServer) async throws -> T
) async throws -> T {
    let server = try RangeServer.start(configuration)
    do {
        let result = try await body(server)
        server.stop()
        return result
    } catch {
        server.stop()
        throw error
    }
}
