import ArgumentParser
import Logging
import RangeServer
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct RangeServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rangeserver",
        abstract: "An HTTP range-download test server with fault injection and a request journal."
    )

    @Option(help: "The numeric address to bind (127.0.0.1, ::1, 0.0.0.0).")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(help: "The directory served under /files/.")
    var root = "fixtures/files"

    @Option(help: "The directory of scenario JSON files (default: fixtures/scenarios when it exists).")
    var scenarios: String?

    @Option(help: "Range headers with more ranges than this are ignored (answered 200).")
    var maxRanges = 64

    @Option(help: "The size of the server's thread pool.")
    var threads = 4

    @Option(help: "Also append every journal entry to this file, as JSON lines.")
    var journalFile: String?

    @Option(help: "How many journal entries to keep in memory; the oldest are dropped and counted.")
    var journalLimit = 100_000

    @Option(
        help: ArgumentHelp(
            "How many scenario attempt counts to keep (one per route of a run); beyond it the least recently used is "
                + "forgotten.",
            valueName: "n"))
    var runLimit = Retention.runs.limit

    @Option(
        help: ArgumentHelp(
            "Forget a run's attempt counts after this many seconds unused (it starts again at attempt 1).",
            valueName: "seconds"))
    var runExpiry = Int(Retention.runs.idleExpiry!.components.seconds)

    @Option(
        help: ArgumentHelp(
            "Each connection's memory for the request header and the response header (8K to 16M); larger headers get 431.",
            valueName: "size"))
    var connectionMemory = ByteSize.format(UInt64(RangeServer.Configuration().connectionMemory))

    @Option(help: "Require 'Authorization: Bearer TOKEN' on /_control/ (otherwise it answers loopback peers only).")
    var controlToken: String?

    @Option(
        help: ArgumentHelp(
            "Also listen on this port (0 picks one) without ever accepting, so connects to it hang.",
            valueName: "port"))
    var blackholePort: Int?

    @Option(help: ArgumentHelp("Also serve HTTPS on this port (0 picks one).", valueName: "port"))
    var tlsPort: Int?

    @Option(
        name: .customLong("h2-port"),
        help: ArgumentHelp(
            "Also serve HTTP/2 over TLS on this port (0 picks one), with the HTTPS port's CA; ALPN offers h2 and "
                + "http/1.1, and a client that chooses http/1.1 gets 421.", valueName: "port"))
    var h2Port: Int?

    @Option(
        name: .customLong("h2c-port"),
        help: ArgumentHelp(
            "Also serve cleartext HTTP/2 with prior knowledge on this port (0 picks one).", valueName: "port"))
    var h2cPort: Int?

    @Option(
        help: ArgumentHelp(
            "Keep the throwaway CA here (ca.pem, made on first use and reused) with the issued server.pem "
                + "(default: a new temporary directory, removed on exit).",
            valueName: "dir"))
    var tlsDir: String?

    @Option(
        help: ArgumentHelp(
            "Another host name or IP address for the certificate (repeatable), e.g. a LAN address a phone uses.",
            valueName: "name-or-ip"))
    var tlsName: [String] = []

    @Option(help: ArgumentHelp("Present this certificate (PEM) instead of one from the CA.", valueName: "pem"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The private key (PEM) of --tls-cert.", valueName: "pem"))
    var tlsKey: String?

    @Flag(
        help: ArgumentHelp(
            "Open a listener per TLS fault (handshake-fail, handshake-stall, cert-expired, cert-wrong-host, "
                + "cert-untrusted) and print each."))
    var tlsFaults = false

    @Flag(help: "Do not write an access-log line per request to stderr.")
    var quiet = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, got \(port)") }
        if let blackholePort, !(0...65535).contains(blackholePort) {
            throw ValidationError("--blackhole-port must be from 0 to 65535, got \(blackholePort)")
        }
        if let tlsPort, !(0...65535).contains(tlsPort) {
            throw ValidationError("--tls-port must be from 0 to 65535, got \(tlsPort)")
        }
        if let h2Port, !(0...65535).contains(h2Port) {
            throw ValidationError("--h2-port must be from 0 to 65535, got \(h2Port)")
        }
        if let h2cPort, !(0...65535).contains(h2cPort) {
            throw ValidationError("--h2c-port must be from 0 to 65535, got \(h2cPort)")
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key must be given together")
        }
        guard maxRanges >= 1 else { throw ValidationError("--max-ranges must be at least 1, got \(maxRanges)") }
        guard (1...256).contains(threads) else {
            throw ValidationError("--threads must be from 1 to 256, got \(threads)")
        }
        guard journalLimit >= 1 else {
            throw ValidationError("--journal-limit must be at least 1, got \(journalLimit)")
        }
        if let problem = runRetention.problem() { throw ValidationError(problem) }
        if let controlToken, controlToken.isEmpty { throw ValidationError("--control-token must not be empty") }
        guard let bytes = ByteSize.parse(connectionMemory).flatMap(Int.init(exactly:)),
            RangeServer.Configuration.connectionMemoryRange.contains(bytes)
        else {
            throw ValidationError(
                "--connection-memory must be a size from 8K to 16M (like 32K), got '\(connectionMemory)'")
        }
    }

    /// The run bounds the options give.
    var runRetention: Retention { Retention(limit: runLimit, idleExpiry: .seconds(runExpiry)) }

    func run() throws {
        // Block the stop signals before libmicrohttpd starts its threads, so that only sigwait sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        // `--quiet` keeps errors and warnings and drops the access log (info) and the stop notice.
        let logger = Logger(
            label: "rangeserver", factory: { _ in StandardErrorLogHandler(logLevel: quiet ? .warning : .info) })
        var configuration = RangeServer.Configuration()
        configuration.logger = logger
        configuration.host = host
        configuration.port = port
        configuration.root = root
        configuration.maxRanges = maxRanges
        configuration.threads = threads
        configuration.journalFile = journalFile
        configuration.journalLimit = journalLimit
        configuration.connectionMemory = Int(ByteSize.parse(connectionMemory) ?? 0)
        configuration.runRetention = runRetention
        configuration.controlToken = controlToken
        configuration.blackholePort = blackholePort
        configuration.tlsPort = tlsPort
        configuration.h2Port = h2Port
        configuration.h2cPort = h2cPort
        configuration.tlsDirectory = tlsDir
        configuration.tlsNames = tlsName
        configuration.tlsCertificateFile = tlsCert
        configuration.tlsKeyFile = tlsKey
        configuration.tlsFaults = tlsFaults
        if tlsPort == nil && (tlsDir != nil || !tlsName.isEmpty || tlsCert != nil || tlsFaults) {
            // A TLS setting without a port still asks for TLS: serve it on a free port.
            configuration.tlsPort = 0
        }
        if let scenarios {
            configuration.scenariosDirectory = scenarios
        } else if isDirectory("fixtures/scenarios") {
            configuration.scenariosDirectory = "fixtures/scenarios"
        }

        let server: RangeServer
        do {
            server = try RangeServer.start(configuration)
        } catch {
            logger.error("rangeserver: \(error)")
            throw ExitCode.failure
        }
        let loopback = isLoopback(host) || host == "localhost"
        if !loopback && controlToken == nil {
            logger.warning(
                "rangeserver: warning: bound to \(host) without --control-token; /_control/ answers loopback peers only"
            )
        }
        // Written straight to the descriptor so scripts waiting for this line see it at once.
        writeLine(STDOUT_FILENO, "rangeserver listening on \(server.baseURL)")
        if let tlsBaseURL = server.tlsBaseURL, let authority = server.certificateAuthorityPath {
            writeLine(STDOUT_FILENO, "rangeserver listening on \(tlsBaseURL) (CA: \(authority))")
            for fault in TLSFault.allCases {
                guard let url = server.tlsFaultBaseURL(fault) else { continue }
                writeLine(STDOUT_FILENO, "rangeserver tls-fault \(fault.rawValue) on \(url)")
            }
        }
        if let h2BaseURL = server.h2BaseURL, let authority = server.certificateAuthorityPath {
            writeLine(STDOUT_FILENO, "rangeserver listening on \(h2BaseURL) (HTTP/2, CA: \(authority))")
        }
        if let h2cBaseURL = server.h2cBaseURL {
            writeLine(STDOUT_FILENO, "rangeserver listening on \(h2cBaseURL) (HTTP/2 cleartext, prior knowledge)")
        }
        if let blackholePort = server.blackholePort {
            let host = host.contains(":") ? "[\(host)]" : host
            writeLine(STDOUT_FILENO, "rangeserver blackhole on \(host):\(blackholePort)")
        }

        var received: Int32 = 0
        sigwait(&signals, &received)
        server.stop()
        logger.notice("rangeserver: stopped on signal \(received)")
    }
}

func printError(_ line: String) {
    writeLine(STDERR_FILENO, line)
}

private func writeLine(_ fd: Int32, _ line: String) {
    var text = line + "\n"
    // A closed stderr or stdout loses the line; there is nowhere left to report that.
    _ = text.withUTF8 { bytes in try? writeAll(fd, UnsafeRawBufferPointer(bytes)) }
}

private func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}
