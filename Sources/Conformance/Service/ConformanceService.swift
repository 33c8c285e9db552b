import Foundation
import NIOConcurrencyHelpers
import RangeServer

/// The conformance harness as a service (`rangecheck serve`): a client anywhere asks for a run, downloads the URLs
/// it is handed however it likes, reports what it ended with, and is judged from the server's journal and its
/// report by the same judge as `rangecheck`.
///
/// The service is a ``CustomRoute`` on a ``RangeServer`` that serves the scenario catalogue: ``startServer(_:)``
/// starts one. Verdicts are kept in a ``ResultStore`` (a JSON Lines file), so a restart loses none, and the live
/// report is rebuilt from them.
package final class ConformanceService: Sendable {
    /// How the service runs.
    public struct Configuration: Sendable {
        /// The scenario directory.
        public var scenariosDirectory = "fixtures/scenarios"
        /// The directory served under `/files/`.
        public var filesRoot = "fixtures/files"
        /// The base handed-out URLs use, `http://HOST:PORT`, when clients reach the server by another address than
        /// the one it listens on (a phone on the LAN, an emulator's 10.0.2.2); https URLs use its host with the TLS
        /// port. Nil: the server's own address.
        public var publicURL: String?
        /// When set, every `/_conformance/` request needs `Authorization: Bearer TOKEN` (or `?token=TOKEN`, for a
        /// browser); without it only loopback peers are answered.
        public var token: String?
        /// The JSON Lines file verdicts are appended to and read back from on start; nil keeps them in memory.
        public var resultsFile: String?
        /// How often the live HTML report reloads itself, in seconds.
        public var refreshSeconds = 5
        /// The runs held in memory, handed out or judged: at most ``Retention/limit`` (the least recently used
        /// beyond it is forgotten), each forgotten once unused (no API request naming it) for
        /// ``Retention/idleExpiry``. A request naming a forgotten run is answered 410. The server ``startServer(_:)``
        /// starts keeps the scenario attempt counts of as many runs (one per route, for the catalogue's widest
        /// scenario) for the same idle time. Default: 10,000 runs, an hour (`--run-limit`, `--run-expiry`).
        public var runRetention = Retention(limit: 10_000, idleExpiry: .seconds(3600))
        /// The report cells (scenario × column) held in memory with their pictures; beyond it the cell judged longest
        /// ago leaves the live report (its verdicts stay in ``resultsFile``). Default 10,000 (`--report-limit`).
        public var reportLimit = 10_000
        /// The time runs are measured with; a test replaces it to expire runs without waiting.
        public var clock: @Sendable () -> ContinuousClock.Instant = { .now }

        /// A configuration with every default.
        public init() {}
    }

    /// The path prefix the API answers under.
    public static let prefix = "/_conformance/"

    let configuration: Configuration
    let catalogue: [CatalogueEntry]
    /// Every scenario loaded, the rows the service does not hand out included: the server it starts serves these
    /// instead of parsing the directory again.
    let scenarios: [String: Scenario]
    let entries: [String: CatalogueEntry]
    let store: ResultStore
    let reportedOutputs = ReportedOutputs()
    /// The runs held: handed out and pending, or judged.
    let runs: NIOLockedValueBox<BoundedTable<String, HeldRun>>
    /// The runs deleted (`DELETE` of the run or of its column), under the runs' own bounds: a request naming one is
    /// told it was deleted (404, as for any resource removed), while one the service forgot by itself (expired,
    /// pushed out, issued before a restart) is 410, so a remote client tells its own deletion from an expiry.
    let deleted: NIOLockedValueBox<BoundedTable<String, Void>>
    /// When the service started, on its clock and on the wall clock: tokens carry wall-clock times, and the service
    /// reads the wall clock as this plus its own clock's progress, so a test's clock moves both.
    let started: (instant: ContinuousClock.Instant, date: Date)
    /// The server whose URLs the service hands out, held weakly: that server keeps the service alive through its
    /// ``route``, and a strong reference back made the two a cycle that outlived `stop()`, with the server's journal
    /// and both catalogues (LeakSanitizer found it; `ServiceLifetimeTests` checks both are freed).
    private let attached = NIOLockedValueBox(AttachedServer())

    /// A weak reference to the attached server.
    private struct AttachedServer: Sendable {
        weak var server: RangeServer?
    }

    /// A run the service holds.
    enum HeldRun: Sendable {
        /// Handed out, not yet judged.
        case pending(PendingRun)
        /// Judged: its verdict.
        case judged(ConformanceAPI.Verdict)
    }

    /// A run handed out and not yet judged.
    struct PendingRun: Sendable {
        var run: String
        var scenario: String
        var client: String
        var scheme: String
        var urls: [ConformanceAPI.HandedURL]
        var steps: [ConformanceAPI.StepSpec]
        var segmented: Bool?
        var created: ContinuousClock.Instant
        /// Set while its result is being judged, so a second report of the same run is refused at once.
        var judging = false
    }

    /// Loads the catalogue and the verdicts already given.
    ///
    /// - Parameters:
    ///   - configuration: the settings.
    /// - Throws: a scenario or expectation error naming the file, or `ConformanceError.io` for an unreadable
    ///   results file.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        // A `dead-ipv6` row's name must resolve to a dead ::1 beside the server, which only `rangecheck run` can
        // arrange (a hosts file in its own mount namespace): a remote tester's resolver is its own, so the service
        // neither lists nor hands out such a row.
        let loaded = try CatalogueEntry.load(directory: configuration.scenariosDirectory, root: configuration.filesRoot)
        scenarios = CatalogueEntry.scenariosByName(loaded)
        catalogue = loaded.filter { $0.expectation.entry != .deadIPv6 }
        entries = Dictionary(catalogue.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        if let problem = configuration.runRetention.problem() { throw ConformanceError.invalidArgument(problem) }
        guard Retention.limitRange.contains(configuration.reportLimit) else {
            throw ConformanceError.invalidArgument(
                "--report-limit must be from 1 to \(Retention.limitRange.upperBound), got \(configuration.reportLimit)")
        }
        let now = configuration.clock()
        started = (now, Date())
        var runs = BoundedTable<String, HeldRun>(configuration.runRetention)
        store = try ResultStore(path: configuration.resultsFile, limit: configuration.reportLimit) { line in
            runs.set(.judged(line.verdict), forKey: line.verdict.run, now: now)
        }
        self.runs = NIOLockedValueBox(runs)
        deleted = NIOLockedValueBox(BoundedTable(configuration.runRetention))
    }

    /// The wall-clock time now, as the service's clock measures it.
    var wallNow: Date {
        let elapsed = configuration.clock() - started.instant
        let (seconds, attoseconds) = elapsed.components
        return started.date.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// The largest request body read: a report of a 5 GiB output carries 81,920 block digests (about 5.5 MB).
    public static let maximumBodySize = 8 << 20

    /// The route to add to a server's configuration (``startServer(_:)`` does it for you).
    public var route: CustomRoute {
        CustomRoute(prefix: Self.prefix, maximumBodySize: Self.maximumBodySize) { [self] request in
            await self.handle(request)
        }
    }

    /// Starts a server with the catalogue and the API, and attaches the service to it.
    ///
    /// - Parameters:
    ///   - base: the server's settings (host, ports, TLS); the scenarios, root and routes are set from the service.
    /// - Returns: the running server; stop it with `stop()`.
    /// - Throws: the server's start error.
    public func startServer(_ base: RangeServer.Configuration = RangeServer.Configuration()) throws -> RangeServer {
        var configuration = base
        configuration.scenariosDirectory = self.configuration.scenariosDirectory
        configuration.scenarios = scenarios
        configuration.root = self.configuration.filesRoot
        configuration.customRoutes.append(route)
        // The scenario attempt counts of the runs held live as long as the runs do: one per route of each.
        let routes = max(1, catalogue.map(\.expectation.files.count).max() ?? 1)
        configuration.runRetention = Retention(
            limit: min(Retention.limitRange.upperBound, self.configuration.runRetention.limit * routes),
            idleExpiry: self.configuration.runRetention.idleExpiry)
        configuration.clock = self.configuration.clock
        // For the rows that send a client to an edge that never answers (`entry: blackhole`).
        if configuration.blackholePort == nil { configuration.blackholePort = 0 }
        let server = try RangeServer.start(configuration)
        attach(server)
        return server
    }

    /// Tells the service which server serves its scenarios (``startServer(_:)`` does it). The service does not keep
    /// the server alive; the server keeps the service alive through ``route``.
    ///
    /// - Parameters:
    ///   - server: a running server whose configuration has ``route`` and the service's scenarios.
    public func attach(_ server: RangeServer) { attached.withLockedValue { $0.server = server } }

    var server: RangeServer? { attached.withLockedValue { $0.server } }

    /// The latest verdict of every report cell held, in the order judged.
    public var verdicts: [ConformanceAPI.Verdict] { store.all.map(\.verdict) }

    /// How many runs are held now (handed out or judged, not yet forgotten).
    public var heldRunCount: Int {
        let now = configuration.clock()
        return runs.withLockedValue { runs in
            runs.expire(now: now)
            return runs.count
        }
    }
}
