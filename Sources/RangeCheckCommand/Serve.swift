import ArgumentParser
import Conformance
import Foundation
import RangeServer

/// `rangecheck serve`: the conformance service, for clients that run elsewhere (an app on a phone, a library in
/// another language): they ask for runs over HTTP, and it judges what they did.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the scenario catalogue and judge clients that report their runs over HTTP.",
        discussion: """
            Prints `rangecheck serving on http://HOST:PORT` first, and with --tls-port \
            `rangecheck serving on https://HOST:PORT (CA: PATH)` second. The API is under /_conformance/ \
            (docs/conformance-api.json, and GET openapi.json for this catalogue): GET scenarios, POST runs, \
            POST runs/{run}/result, GET report, DELETE runs/{run} or columns/{column}. Verdicts are appended to \
            --results and read back on start. SIGINT or SIGTERM stops it (status 0).
            """
    )

    @Option(name: .customLong("host"), help: "The numeric address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .customLong("port"), help: "The port (0: a free one).")
    var port = 8090

    @Option(name: .customLong("tls-port"), help: "Also serve HTTPS on this port (0: a free one).")
    var tlsPort: Int?

    @Option(
        name: .customLong("h2-port"),
        help: "Also serve HTTP/2 over TLS on this port (0: a free one), for runs created with scheme h2.")
    var h2Port: Int?

    @Option(
        name: .customLong("h2c-port"),
        help: "Also serve cleartext HTTP/2 (prior knowledge) on this port (0: a free one), for runs with scheme h2c.")
    var h2cPort: Int?

    @Option(name: .customLong("tls-dir"), help: "Where the throwaway CA is kept and reused (default: a temporary one).")
    var tlsDir: String?

    @Option(
        name: .customLong("tls-name"),
        help: "Another host name or IP address for the TLS certificate, e.g. the LAN address (repeatable).")
    var tlsNames: [String] = []

    @OptionGroup var catalogueOptions: CatalogueOptions

    @Option(
        name: .customLong("public-url"),
        help: "The base handed-out URLs use, http://HOST[:PORT], when clients reach the server by another address.")
    var publicURL: String?

    @Option(
        name: .customLong("token"),
        help: "Require Authorization: Bearer TOKEN (or ?token=) on /_conformance/; needed beyond loopback.")
    var token: String?

    @Option(name: .customLong("results"), help: "The JSON Lines file verdicts are appended to and read back from.")
    var results: String?

    @Option(
        name: .customLong("journal-limit"),
        help: "Requests kept in memory for judging; a run must report before its requests are pushed out.")
    var journalLimit = 100_000

    @Option(
        name: .customLong("run-limit"),
        help: ArgumentHelp(
            "Runs held in memory, handed out or judged; beyond it the least recently used is forgotten (410).",
            valueName: "n"))
    var runLimit = ConformanceService.Configuration().runRetention.limit

    @Option(
        name: .customLong("run-expiry"),
        help: ArgumentHelp(
            "Forget a run after this many seconds without a request naming it (410 after).", valueName: "seconds"))
    var runExpiry = Int(ConformanceService.Configuration().runRetention.idleExpiry!.components.seconds)

    @Option(
        name: .customLong("report-limit"),
        help: ArgumentHelp(
            "Report cells (scenario x column) held in memory; beyond it the oldest leaves the live report.",
            valueName: "n"))
    var reportLimit = ConformanceService.Configuration().reportLimit

    func validate() throws {
        if let problem = Retention(limit: runLimit, idleExpiry: .seconds(runExpiry)).problem() {
            throw ValidationError(problem)
        }
        guard Retention.limitRange.contains(reportLimit) else {
            throw ValidationError(
                "--report-limit must be from 1 to \(Retention.limitRange.upperBound), got \(reportLimit)")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535, got \(port)") }
        if let tlsPort, !(0...65535).contains(tlsPort) {
            throw ValidationError("--tls-port must be 0...65535, got \(tlsPort)")
        }
        if let h2Port, !(0...65535).contains(h2Port) {
            throw ValidationError("--h2-port must be 0...65535, got \(h2Port)")
        }
        if let h2cPort, !(0...65535).contains(h2cPort) {
            throw ValidationError("--h2c-port must be 0...65535, got \(h2cPort)")
        }
        if let token, token.isEmpty { throw ValidationError("--token must not be empty") }
        guard journalLimit >= 1 else {
            throw ValidationError("--journal-limit must be at least 1, got \(journalLimit)")
        }
        if token == nil && !(isLoopback(host) || host == "localhost") {
            throw ValidationError("--token is required when --host (\(host)) is not a loopback address")
        }
        if let publicURL {
            guard let url = URLComponents(string: publicURL), url.scheme == "http", let host = url.host, !host.isEmpty,
                url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw ValidationError("--public-url must be http://HOST[:PORT] with no path, got '\(publicURL)'")
            }
        }
    }

    func run() async throws {
        // A client that goes away mid-response must not end the service.
        signal(SIGPIPE, SIG_IGN)
        var configuration = ConformanceService.Configuration()
        configuration.scenariosDirectory = catalogueOptions.scenariosDirectory
        configuration.filesRoot = catalogueOptions.root
        configuration.publicURL = publicURL
        configuration.token = token
        configuration.resultsFile = results
        configuration.runRetention = Retention(limit: runLimit, idleExpiry: .seconds(runExpiry))
        configuration.reportLimit = reportLimit
        var serverConfiguration = RangeServer.Configuration()
        serverConfiguration.host = host
        serverConfiguration.port = port
        serverConfiguration.threads = 8
        serverConfiguration.journalLimit = journalLimit
        serverConfiguration.tlsPort = tlsPort ?? (tlsDir != nil || !tlsNames.isEmpty ? 0 : nil)
        serverConfiguration.h2Port = h2Port
        serverConfiguration.h2cPort = h2cPort
        serverConfiguration.tlsDirectory = tlsDir
        serverConfiguration.tlsNames = tlsNames
        let server: RangeServer
        do {
            let service = try ConformanceService(configuration)
            server = try service.startServer(serverConfiguration)
        } catch {
            FileHandle.standardError.write(Data("rangecheck serve: \(error)\n".utf8))
            throw ExitCode.failure
        }
        defer { server.stop() }
        FileHandle.standardOutput.write(Data("rangecheck serving on \(server.baseURL)\n".utf8))
        if tlsPort != nil || tlsDir != nil || !tlsNames.isEmpty, let tlsBaseURL = server.tlsBaseURL,
            let authority = server.certificateAuthorityPath
        {
            FileHandle.standardOutput.write(Data("rangecheck serving on \(tlsBaseURL) (CA: \(authority))\n".utf8))
        }
        if let h2BaseURL = server.h2BaseURL, let authority = server.certificateAuthorityPath {
            FileHandle.standardOutput.write(
                Data("rangecheck serving on \(h2BaseURL) (HTTP/2, CA: \(authority))\n".utf8))
        }
        if let h2cBaseURL = server.h2cBaseURL {
            FileHandle.standardOutput.write(Data("rangecheck serving on \(h2cBaseURL) (HTTP/2 cleartext)\n".utf8))
        }
        // Every verdict is in --results as soon as it is answered, so ending on a signal loses none.
        let received = await StopSignals.next()
        FileHandle.standardError.write(Data("rangecheck serve: stopped on signal \(received)\n".utf8))
    }
}
