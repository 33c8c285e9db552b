import ArgumentParser
import Conformance
import Foundation
import NIOConcurrencyHelpers

/// `rangecheck [run]`: runs the conformance matrix of downloaders against an in-process rangeserver.
struct RunMatrix: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run every scenario against every downloader and print the conformance matrix (the default).",
        discussion: """
            Starts an in-process rangeserver on a free loopback port with the scenario catalogue, runs each \
            (scenario, client) pair with a fresh run token and temporary directory, and judges the output file \
            and the server's journal against the scenario's expect section.

            Clients: \(ClientCatalogue.swiftNames.joined(separator: ", ")), every client definition file in the \
            clients directory beside --scenarios (fixtures/clients: curl, wget, wget2, aria2c, aria2c-x4, axel, \
            axel-n4) and in each --client-dir, and any --client-command. Every --client-command column runs; \
            --client picks the others (default: all of them). --list shows each with its version and whether it is \
            installed. A client that is not installed is skipped; a scenario step a client cannot perform is n/a.

            A client is started once per step (its start, and each restart a kill-at or pause-at step makes); the \
            harness runs it again only after an exit its definition declares transient (--transient; the built-in \
            clients' are in docs/conformance.md), at most --attempts runs per step, and no bound counts what a \
            re-run asked for or the time it took against the client; the cell says so.

            With --tls every scenario is handed out over https from the server's TLS port. Whenever the server has \
            TLS (with --tls, or for a row redirecting to https or a TLS fault) every client is given the server's \
            CA file; a client that cannot take one (urlsession) is n/a for those rows.

            SIGINT or SIGTERM stops the run: the running client's process group is killed, its temporary directory \
            removed (unless --keep), and the reports are written with the pairs that finished, marked interrupted.

            Exit status: 1 when a gating client (--gate; by default engine and rangefetch) has a cell graded \
            --gate-at or worse (by default anything worse than pass; other clients are informational), or with \
            --baseline a cell graded worse than in the baseline, 64 for a usage error, 130 when stopped by SIGINT \
            or SIGTERM.
            """
    )

    @Option(
        name: .customLong("client"),
        help:
            "Run this built-in client (repeatable; default: every built-in client); naming a --client-command is allowed."
    )
    var clients: [String] = []

    @Option(
        name: .customLong("client-dir"),
        help: ArgumentHelp(
            "Also load the client definition files (NAME.json) in this directory (repeatable); a definition replaces "
                + "one of the same name loaded before it."))
    var clientDirectories: [String] = []

    @Option(
        name: .customLong("client-command"),
        help: ArgumentHelp(
            "Add a client column from a template, NAME=TEMPLATE, with {url}, {output}, {state}, {cafile} and "
                + "{authorization}, or {output-dir} instead of {output} for a client that names its file "
                + "(repeatable); it always runs."))
    var clientCommands: [String] = []

    @Option(
        name: .customLong("transient"),
        help: ArgumentHelp(
            "NAME=CODES: exit statuses of --client-command NAME after which the harness runs it again, e.g. 7,18 "
                + "(repeatable; default: none)."))
    var transients: [String] = []

    @Option(name: .customLong("scenario"), help: "Only scenarios matching this glob (comma-separated alternatives).")
    var scenarioPattern: String?

    @Flag(name: .customLong("tls"), help: "Hand out every scenario over https, giving every client the server's CA.")
    var tls = false

    @Option(
        name: .customLong("scheme"),
        help: ArgumentHelp(
            "The wire to hand every scenario out over: http, https (as --tls), h2 (HTTP/2 over TLS) or h2c (cleartext "
                + "HTTP/2 with prior knowledge).", valueName: "scheme"))
    var schemeName: String?

    /// The scheme of `--scheme`, or https with `--tls`.
    var scheme: MatrixScheme {
        get throws {
            guard let schemeName else { return tls ? .https : .http }
            guard let scheme = MatrixScheme(rawValue: schemeName) else {
                throw ValidationError("--scheme must be http, https, h2 or h2c, got '\(schemeName)'")
            }
            if tls && scheme != .https {
                throw ValidationError("--tls is --scheme https; it cannot be combined with --scheme \(schemeName)")
            }
            return scheme
        }
    }

    @Flag(
        name: .customLong("list"),
        help: "List the scenarios and clients, then exit; with --shard, also the (scenario, client) pairs of the shard."
    )
    var list = false

    @Option(
        name: .customLong("gate"),
        help: "A client whose failures make the exit status 1 (repeatable; default: engine and rangefetch).")
    var gates: [String] = []

    @Option(
        name: .customLong("gate-at"),
        help:
            "The least grade of a --gate client's cell that fails the run: corrupt, fail, unsafe or costly (default: costly, anything worse than pass).",
        transform: { text in
            guard let grade = Grade.threshold(text) else {
                throw ValidationError("--gate-at: '\(text)' is not corrupt, fail, unsafe or costly")
            }
            return grade
        })
    var gateAt: Grade = .costly

    @Option(
        name: .customLong("baseline"),
        help:
            "An earlier --json report: fail only on cells graded worse than there (cells it lacks are new and do not fail); the reports mark new, worse and fixed cells."
    )
    var baselinePath: String?

    @Option(name: .customLong("shard"), help: "Run only shard I of N of the (scenario, client) pairs, e.g. 2/4.")
    var shard: String?

    @Option(name: .customLong("repeat"), help: "Run each pair this many times; any failing run fails the pair.")
    var repeatCount = 1

    @Flag(name: .customLong("include-slow"), help: "Also run scenarios tagged slow (the 5 GiB download).")
    var includeSlow = false

    @OptionGroup var catalogueOptions: CatalogueOptions

    @Option(
        name: .customLong("attempts"),
        help: "The most runs of a client per step, the first included, when it keeps exiting with a transient status.")
    var attempts = 5

    @Option(name: .customLong("markdown"), help: "Write the matrix as Markdown to this file.")
    var markdownPath: String?

    @Option(name: .customLong("junit"), help: "Write JUnit XML (one test case per pair) to this file.")
    var junitPath: String?

    @Option(name: .customLong("json"), help: "Write the matrix as JSON to this file.")
    var jsonPath: String?

    @Flag(
        name: .customLong("json-traces"),
        help:
            "In the --json report, include each run's trace: its requests and outputs, what its picture is drawn from."
    )
    var jsonTraces = false

    @Option(name: .customLong("html"), help: "Write a self-contained coloured HTML page to this file.")
    var htmlPath: String?

    @Flag(
        name: .customLong("keep"), help: "Keep each pair's temporary directory (outputs, client logs and the journal).")
    var keep = false

    @Flag(name: .customLong("quiet"), help: "Do not print a line per finished pair on stderr.")
    var quiet = false

    func validate() throws {
        guard repeatCount >= 1 else { throw ValidationError("--repeat must be at least 1") }
        guard attempts >= 1 else { throw ValidationError("--attempts must be at least 1") }
        _ = try scheme
        if let shard {
            do { _ = try Shard(parsing: shard) } catch { throw ValidationError(error.message) }
        }
        let commands = try commandClients()
        let catalogue = try clientCatalogue()
        var names = Set<String>()
        for client in commands {
            // Otherwise `--client curl` would quietly run the known curl instead of the command.
            if catalogue.names.contains(client.name) {
                throw ValidationError(
                    "--client-command name '\(client.name)' is a known client; give the command another name")
            }
            guard names.insert(client.name).inserted else {
                throw ValidationError("--client-command name '\(client.name)' is defined twice")
            }
        }
        do { _ = try catalogue.columns(named: clients, commands: commands) } catch {
            throw ValidationError(error.message)
        }
        let known = catalogue.names + commands.map(\.name)
        for client in gates where !known.contains(client) {
            throw ValidationError("unknown client '\(client)' (known: \(known.joined(separator: ", ")))")
        }
    }

    /// The known clients: the Swift ones and the definitions beside the scenarios and in each `--client-dir`.
    func clientCatalogue() throws -> ClientCatalogue {
        let besideScenarios = ClientCatalogue.definitionsDirectory(besideScenarios: catalogueOptions.scenariosDirectory)
        do {
            return ClientCatalogue(
                rangecheckDirectory: Self.executableDirectory,
                definitions: try ClientCatalogue.loadDefinitions(
                    [besideScenarios] + clientDirectories, optional: [besideScenarios]))
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The `--client-command` clients, each with its `--transient` exit statuses.
    func commandClients() throws -> [SubprocessClient] {
        var transient: [String: Set<Int32>] = [:]
        let defined = clientCommands.compactMap { $0.split(separator: "=").first.map(String.init) }
        for specification in transients {
            let declaration: TransientExits
            do { declaration = try TransientExits(parsing: specification) } catch {
                throw ValidationError(error.message)
            }
            guard defined.contains(declaration.client) else {
                let fixed =
                    (try? clientCatalogue().names.contains(declaration.client)) == true
                    ? ": a known client's transient exits are in its definition (fixtures/clients)" : ""
                throw ValidationError(
                    "--transient \(declaration.client): no --client-command named '\(declaration.client)'\(fixed)")
            }
            transient[declaration.client, default: []].formUnion(declaration.codes)
        }
        var clients: [SubprocessClient] = []
        for command in clientCommands {
            let name = command.split(separator: "=").first.map(String.init) ?? ""
            do { clients.append(try SubprocessClient.command(command, transient: transient[name] ?? [])) } catch {
                throw ValidationError(error.message)
            }
        }
        return clients
    }

    func run() async throws {
        let catalogue = try clientCatalogue()
        let adapters = try catalogue.columns(named: clients, commands: try commandClients())
        var options = MatrixRunner.Options()
        options.scenariosDirectory = catalogueOptions.scenariosDirectory
        options.filesRoot = catalogueOptions.root
        options.scenarioPattern = scenarioPattern
        options.shard = try shard.map { try Shard(parsing: $0) } ?? .all
        options.repeatCount = repeatCount
        options.includeSlow = includeSlow
        options.attempts = attempts
        options.keepWorkDirectories = keep
        options.scheme = try scheme
        // A failing cell's reproducer names the rangeserver installed beside rangecheck, when there is one.
        if let directory = Self.executableDirectory,
            FileManager.default.isExecutableFile(atPath: "\(directory)/rangeserver")
        {
            options.serverProgram = "\(directory)/rangeserver"
        }
        options.command = (["rangecheck"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
        if !quiet { options.progress = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) } }

        if list {
            let entries = MatrixRunner.select(
                try CatalogueEntry.load(directory: catalogueOptions.scenariosDirectory, root: catalogueOptions.root),
                options: options)
            for entry in entries {
                let tags =
                    entry.expectation.tags.isEmpty ? "" : " [\(entry.expectation.tags.sorted().joined(separator: ","))]"
                print("\(entry.name)\(tags): \(entry.scenario.description)")
            }
            print("")
            for adapter in adapters {
                // A column whose build step has not run is not built here: a listing installs nothing.
                let status =
                    (adapter as? SubprocessClient)?.awaitsBuild == true
                    ? "to be built: its build step runs before its first run"
                    : await adapter.unavailableReason().map { "skipped: \($0)" } ?? "available"
                var facts: [String] = []
                if let subprocess = adapter as? SubprocessClient, let version = await subprocess.version() {
                    facts.append("version \(version)")
                }
                // The schemes it can be judged over (the others make every cell n/a before it runs).
                let schemes = MatrixScheme.allCases.filter { adapter.protocolLimitation($0) == nil }
                facts.append("schemes: " + schemes.map(\.rawValue).joined(separator: " "))
                if let definition = catalogue.definitions.first(where: { $0.name == adapter.name }) {
                    facts.append("package: \(definition.package.installCommand)")
                }
                let described = facts.isEmpty ? "" : " " + facts.joined(separator: ", ")
                print("\(adapter.name) (\(status))\(described): \(adapter.invocation)")
            }
            if shard != nil {
                print("")
                let pairs = options.shard.pairs(scenarios: entries.map(\.name), clients: adapters.map(\.name))
                for pair in pairs { print("pair \(pair.scenario) \(pair.client)") }
            }
            return
        }

        try await enterPrivateWorld(options: options)

        // Read before the run, so a bad file costs nothing.
        var baseline: Baseline?
        if let baselinePath {
            do { baseline = try Baseline.load(path: baselinePath) } catch { throw ValidationError(error.message) }
            let scheme = try self.scheme.rawValue
            if let baseline, baseline.scheme != scheme {
                throw ValidationError(
                    "--baseline \(baselinePath): a report of an \(baseline.scheme) run, and this run is \(scheme)")
            }
        }

        // The first SIGINT or SIGTERM cancels the run: MatrixRunner kills the running client's process group and
        // returns the pairs that finished, which are reported as an interrupted run.
        let running = Task { try await MatrixRunner.run(clients: adapters, options: options) }
        let received = NIOLockedValueBox<Int32?>(nil)
        let signals = StopSignals { number in
            received.withLockedValue { $0 = number }
            FileHandle.standardError.write(
                Data("rangecheck: \(StopSignals.name(number)): stopping the clients, then writing the reports\n".utf8))
            running.cancel()
        }
        var matrix = try await running.value
        signals.cancel()
        let stoppedBy = received.withLockedValue { $0 }
        // Only the leading word: the rest may name a kept directory, whose path is the user's.
        if let stoppedBy, let interruption = matrix.interruption, interruption.hasPrefix("interrupted ") {
            matrix.interruption =
                "interrupted by \(StopSignals.name(stoppedBy)) " + interruption.dropFirst("interrupted ".count)
        }
        if let baseline { matrix = baseline.compare(matrix) }
        print(Report.terminal(matrix), terminator: "")
        for (path, text) in [
            (markdownPath, Report.markdown(matrix)), (junitPath, Report.junit(matrix)),
            (jsonPath, Report.json(matrix, traces: jsonTraces)),
            (htmlPath, Report.html(matrix)),
        ] {
            guard let path else { continue }
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        if matrix.interruption != nil { throw ExitCode(130) }
        // Our own columns, gated by default, are gated on everything; --gate-at is for the clients a user names.
        let gating = gates.isEmpty ? Matrix.gatingClients : Set(gates)
        let threshold = gates.isEmpty ? Grade.costly : gateAt
        if baseline != nil {
            let worse = matrix.regressions(gating: gating, threshold: threshold)
            for cell in worse {
                let was = cell.baseline?.was?.label ?? "?"
                FileHandle.standardError.write(
                    Data(
                        "rangecheck: worse than the baseline: \(cell.scenario) × \(cell.client) (\(was) → \(cell.label))\n"
                            .utf8))
            }
            if !worse.isEmpty { throw ExitCode(1) }
        } else if matrix.hasGatingFailure(gating: gating, threshold: threshold) {
            throw ExitCode(1)
        }
    }

    /// For rows that change the client's world (`disk-full-at`, `entry: dead-ipv6`): starts this command again in a
    /// private mount namespace of its own (the same process, through `unshare --mount`), where those rows' mounts
    /// live and die with it; in that second start, prepares the namespace. Where none can be made, the reason is
    /// recorded and the rows are n/a.
    private func enterPrivateWorld(options: MatrixRunner.Options) async throws {
        if let left = ProcessInfo.processInfo.environment[ClientWorld.environmentKey] {
            ClientWorld.prepare(leftNamespace: left)
            return
        }
        let entries = MatrixRunner.select(
            try CatalogueEntry.load(directory: catalogueOptions.scenariosDirectory, root: catalogueOptions.root),
            options: options)
        guard entries.contains(where: { $0.expectation.diskFullSize != nil || $0.expectation.entry == .deadIPv6 })
        else { return }
        if let problem = await ClientWorld.namespaceProblem() {
            ClientWorld.markUnavailable(problem)
            return
        }
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        ClientWorld.markUnavailable(
            ClientWorld.reexec(executable: executable, arguments: Array(CommandLine.arguments.dropFirst())))
    }

    /// The directory of this executable, where `rangefetch` is looked for first.
    static var executableDirectory: String? {
        let path =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (path as NSString).deletingLastPathComponent
    }
}
