import Foundation
import RangeServer

/// The I/O shell around the judge: starts a server, runs each pair in a fresh directory with a fresh run
/// token, performs the scenario's client-side steps, gathers facts and asks the judge.
public enum MatrixRunner {
    /// How the matrix runs.
    public struct Options: Sendable {
        /// The scenario directory.
        public var scenariosDirectory = "fixtures/scenarios"
        /// The directory served under `/files/`.
        public var filesRoot = "fixtures/files"
        /// Only scenarios matching this glob (comma-separated alternatives); nil runs all.
        public var scenarioPattern: String?
        /// The slice of (scenario, client) pairs to run.
        public var shard = Shard.all
        /// How many times each pair runs; a pair fails when any run fails.
        public var repeatCount = 1
        /// Whether scenarios tagged `slow` run (otherwise they are left out of the matrix).
        public var includeSlow = false
        /// The idle timeout given to every client.
        public var idleTimeout: Duration = .seconds(5)
        /// The most runs of a subprocess client per start (the first, and each step's restart), that start included:
        /// the harness runs a client again only after an exit its definition declares transient.
        public var attempts = 5
        /// A pair still running after this long is stopped and fails.
        public var pairTimeout: Duration = .seconds(120)
        /// The limit for `slow` scenarios.
        public var slowPairTimeout: Duration = .seconds(1800)
        /// How many times a row's `max-elapsed` the client may take before its cell is `costly` for slowness: more
        /// than 1 for a client on a slow or shared machine (an emulator, a loaded CI runner), where starting a
        /// process can take seconds the client is not to blame for. Hangs are still bounded by ``pairTimeout``.
        public var timeAllowance: Double = 1
        /// Keep each pair's temporary directory (outputs, logs) instead of removing it.
        public var keepWorkDirectories = false
        /// The wire every scenario is handed out over: http, https (the TLS port; clients are given the CA), h2 (the
        /// HTTP/2 TLS port) or h2c (cleartext HTTP/2 with prior knowledge).
        public var scheme = MatrixScheme.http
        /// Whether the scheme is https; setting it picks https or http.
        public var tls: Bool {
            get { scheme == .https }
            set { scheme = newValue ? .https : .http }
        }
        /// Called with one line per finished pair (and other progress).
        public var progress: (@Sendable (String) -> Void)?
        /// The command line, recorded in reports.
        public var command = "rangecheck"
        /// The `rangeserver` a failing cell's reproducer starts: a path, or the name on PATH.
        public var serverProgram = "rangeserver"
        /// Where a failing cell's reproducer runs, `DIRECTORY/SCENARIO/CLIENT`; nil: `rangecheck-repro` in the
        /// temporary directory.
        public var reproductionDirectory: String?

        /// Options with every default.
        public init() {}
    }

    /// The rows this run will show, in order: matching `scenarioPattern`, slow ones only when included.
    ///
    /// - Parameters:
    ///   - catalogue: every entry.
    ///   - options: the filters.
    /// - Returns: the selected entries.
    public static func select(_ catalogue: [CatalogueEntry], options: Options) -> [CatalogueEntry] {
        catalogue.filter { entry in
            (options.scenarioPattern.map { Glob.matches($0, entry.name) } ?? true)
                && (options.includeSlow || !entry.isSlow)
        }
    }

    /// Runs the matrix.
    ///
    /// Cancelling the task stops the run cleanly: the running pair's client is terminated (its whole process group
    /// killed) and its directory removed (unless kept: then ``Matrix/interruption`` names it), no further pair
    /// starts, and the matrix of the pairs that finished is returned with ``Matrix/interruption`` set.
    ///
    /// - Parameters:
    ///   - clients: the columns, in order.
    ///   - options: what to run and how.
    /// - Returns: the matrix of the pairs in the shard (those that finished, when cancelled).
    /// - Throws: a scenario or expectation error while loading, or a server start error.
    public static func run(clients: [any ClientAdapter], options: Options) async throws -> Matrix {
        let loaded = try CatalogueEntry.load(directory: options.scenariosDirectory, root: options.filesRoot)
        let catalogue = select(loaded, options: options)
        var configuration = RangeServer.Configuration()
        configuration.root = options.filesRoot
        // The server serves the catalogue loaded here instead of parsing the directory again; the directory still
        // names where it came from (the reproducers' command lines).
        configuration.scenariosDirectory = options.scenariosDirectory
        configuration.scenarios = CatalogueEntry.scenariosByName(loaded)
        configuration.threads = 8
        // For the rows that send a client to an edge that never answers (`entry: blackhole`, `blackhole:` steps).
        configuration.blackholePort = 0
        // The TLS port (0: a free one); without it the server still opens one when a row redirects to https.
        switch options.scheme {
        case .http: break
        case .https: configuration.tlsPort = 0
        case .h2: configuration.h2Port = 0
        case .h2c: configuration.h2cPort = 0
        }
        // `[::1]` at the plain port, dead, for the `dead-ipv6` rows that can run here.
        configuration.deadIPv6 = catalogue.contains { $0.expectation.entry == .deadIPv6 && worldProblem($0) == nil }
        return try await withRangeServer(configuration) { server in
            var unavailable: [String: String?] = [:]
            var versions: [String: String] = [:]
            for client in clients {
                unavailable[client.name] = await client.unavailableReason()
                if unavailable[client.name] == .some(nil), let version = await (client as? SubprocessClient)?.version()
                {
                    versions[client.name] = version
                }
            }
            var cells: [MatrixCell] = []
            let byName = Dictionary(catalogue.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let clientByName = Dictionary(clients.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let pairs = options.shard.pairs(scenarios: catalogue.map(\.name), clients: clients.map(\.name))
            var interruption: String?
            for pair in pairs {
                if Task.isCancelled {
                    interruption = "interrupted after \(cells.count) of \(pairs.count) pairs"
                    break
                }
                let entry = byName[pair.scenario]!
                let client = clientByName[pair.client]!
                let cell: MatrixCell
                if let reason = unavailable[client.name] ?? nil {
                    cell = MatrixCell(scenario: entry.name, client: client.name, result: .skipped(reason))
                } else {
                    cell = await runRepeated(entry, client: client, server: server, options: options)
                }
                // A pair cut short by the cancellation has no verdict: it is left out, not failed; the directory
                // --keep kept for it is named in the interruption, as no cell will.
                if Task.isCancelled {
                    let kept =
                        cell.result == .skipped("interrupted")
                        ? cell.notes.map { "; \(cell.scenario) × \(cell.client) cut short, \($0)" }.joined() : ""
                    interruption = "interrupted after \(cells.count) of \(pairs.count) pairs" + kept
                    break
                }
                options.progress?(
                    "\(cell.result.label) \(cell.scenario) × \(cell.client)"
                        + (cell.result.reason.isEmpty ? "" : ": \(cell.result.reason)"))
                cells.append(cell)
            }
            var matrix = Matrix(
                scenarios: catalogue.map(\.name), clients: clients.map(\.name), cells: cells,
                invocations: Dictionary(
                    clients.map { ($0.name, $0.invocation) }, uniquingKeysWith: { first, _ in first }),
                command: options.command, scheme: options.scheme.rawValue,
                descriptions: CatalogueEntry.descriptions(catalogue), interruption: interruption)
            matrix.references = CatalogueEntry.references(catalogue)
            matrix.versions = versions
            return matrix
        }
    }

    static func runRepeated(
        _ entry: CatalogueEntry, client: any ClientAdapter, server: RangeServer, options: Options
    )
        async -> MatrixCell
    {
        var total: Duration = .zero
        // The picture of a repeated pair is its failing run's, else its last run's.
        var trace: RunTrace?
        // The notes of every round, each once, prefixed with its round when there are several.
        var notes: [String] = []
        for round in 1...max(1, options.repeatCount) {
            let cell = await runPair(entry, client: client, server: server, options: options)
            total += cell.elapsed ?? .zero
            trace = cell.trace
            notes += cell.notes.map { options.repeatCount > 1 ? "run \(round)/\(options.repeatCount): \($0)" : $0 }
            if Task.isCancelled { return cell }
            if case .fail(let reason) = cell.result, options.repeatCount > 1 {
                return MatrixCell(
                    scenario: entry.name, client: client.name,
                    result: .fail("run \(round)/\(options.repeatCount): \(reason)"),
                    elapsed: total, trace: trace, notes: notes, reasons: cell.reasons, reproducer: cell.reproducer)
            }
            if cell.result != .pass { return cell }
        }
        return MatrixCell(
            scenario: entry.name, client: client.name, result: .pass, elapsed: total, trace: trace, notes: notes)
    }

    /// The reproducer of a failed pair: the server's catalogue (absolute paths) on the reproducer's ports, the
    /// client's command for the same job there, and the expected digest (left to a command above 1 GiB, which would
    /// take long to hash here).
    static func reproducer(
        _ entry: CatalogueEntry, client: any ClientAdapter, run: String, server: RangeServer, options: Options,
        observed: String, kept: String?
    ) -> Reproducer {
        var settings = Reproducer.Server(
            scenariosDirectory: absolute(server.configuration.scenariosDirectory ?? options.scenariosDirectory),
            root: absolute(server.configuration.root))
        settings.program = options.serverProgram
        settings.scheme = options.scheme
        settings.certificateAuthority = server.certificateAuthorityPath != nil
        let base = options.reproductionDirectory ?? "\(FileManager.default.temporaryDirectory.path)/rangecheck-repro"
        let directory = "\(base)/\(entry.name)/\(client.name)"
        let job = Reproducer.job(
            entry: entry, run: run, server: settings, directory: directory, idleTimeout: options.idleTimeout,
            attempts: options.attempts)
        let command = client.command(for: job).map { Reproducer.Client.command($0) }
        let expected = entry.expectedContent
        let digest = expected.length <= 1 << 30 ? expected.sha256(version: entry.expectedVersion) : nil
        return Reproducer.make(
            entry: entry, run: run, job: job,
            client: command ?? .invocation(name: client.name, invocation: client.invocation), server: settings,
            directory: directory, expectedSHA256: digest, observed: observed, kept: kept)
    }

    /// `path` from the current directory, when it is relative.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
