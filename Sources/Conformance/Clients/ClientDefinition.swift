import Foundation
import RangeServer

/// A downloader described as data: one JSON file per client in `fixtures/clients/` (schema:
/// `fixtures/clients/schema.json`, docs/conformance.md "Clients as data"), read with the line and column of every
/// value, so a mistake is one line naming the file, the line, the column and the key.
///
/// ``client()`` makes the column: a ``SubprocessClient`` whose arguments, environment and list file come from the
/// definition's ``ClientTemplate``.
public struct ClientDefinition: Hashable, Sendable {
    /// The column name (`curl`, `aria2c-x4`); the file is named after it (`curl.json`).
    public var name: String
    /// Why this client is in the table: who downloads through it.
    public var description: String
    /// The program, by name (looked up on PATH) or absolute path; `{build-dir}/...` for one the build step makes.
    public var program: String
    /// The commands that make the program, run once per version before the column's first run (a Go driver, a
    /// virtual environment with a pinned library); nil for a program that is installed as it is.
    public var build: ClientBuild?
    /// A file below the server's root every row is served over (`serve-over`), at a URL ending in its name, for a
    /// client that downloads only files of its own kind (pip: a wheel); rows that cannot be are n/a with why.
    public var servedOver: String?
    /// The directory holding the builds (``ClientBuild/defaultRoot``).
    public var buildRoot = ClientBuild.defaultRoot
    /// The arguments that make the program print its version on its first line (`["--version"]`).
    public var versionArguments: [String]
    /// Where the program comes from: `debian` or `pypi`, and the package's name.
    public var package: Package
    /// The steps and job shapes it can do beyond one plain download.
    public var capabilities: ClientCapabilities
    /// The exit statuses after which the harness runs it again (`"2,6,29"`, as `--transient` takes them).
    public var transientExitCodes: Set<Int32>
    /// The retries when a row gives none (`{retries}`, `{tries}`); nil: the placeholders have no value then.
    public var defaultRetries: Int?
    /// The arguments after the program.
    public var arguments: [ClientTemplate]
    /// Variables added to the environment, each only when every placeholder in its value has one
    /// (`SSL_CERT_FILE: {cafile}`).
    public var environment: [String: String]
    /// A file written into the state directory before each start, for clients that read their URLs from one
    /// (aria2c's `--input-file`): its name and one entry per transfer.
    public var listFile: ListFile?
    /// The protocols the program speaks (`protocols`): `http/1.1`, `h2` (over TLS, by ALPN), `h2c`; a file without
    /// the key speaks `http/1.1` alone. Nil for a `--client-command` template, which declares nothing: it is tried
    /// over h2 and judged from the journal.
    public var protocols: Set<String>? = ["http/1.1"]
    /// The words, put before all others, that ask the program for cleartext HTTP/2 with prior knowledge
    /// (`h2c-arguments`); given exactly when `protocols` names h2c.
    public var h2cArguments: [String]?
    /// The directory the definition was read from (`{client-dir}`, where a library's driver script lives); empty for
    /// an inline definition.
    public var directory = ""
    /// The invocation reports show, when not derived from the arguments (a `--client-command` shows its template).
    var invocationOverride: String?
    /// What the client was defined by, for messages: `definition`, or `template` for a `--client-command`.
    var source = "definition"

    /// A package a client is installed from.
    public struct Package: Hashable, Sendable {
        /// `debian` or `pypi`.
        public var registry: String
        /// The package's name there.
        public var name: String

        /// How to install it, as a command.
        public var installCommand: String {
            registry == "debian" ? "apt-get install \(name)" : "pip install \(name)"
        }
    }

    /// A list file: `name` in the state directory, `entry` written once per transfer with its placeholders filled.
    public struct ListFile: Hashable, Sendable {
        /// The file's name.
        public var name: String
        /// One transfer's entry, e.g. `{url}\n  dir={output-dir}\n  out={output-name}\n`.
        public var entry: String
    }

    /// The steps a definition may list under `can`, with the capability each names.
    static let abilities: [(name: String, capability: ClientCapabilities)] = [
        ("kill", .killAndRestart), ("prefill", .prefilledOutput), ("several-files", .multipleFiles),
        ("named-output", .serverNamedOutput),
    ]

    /// Where the build step puts its work, or nil without one.
    public var buildDirectory: String? {
        build?.directory(name: name, clientDirectory: directory, root: buildRoot)
    }

    /// The program to run: `program` with `{client-dir}` and `{build-dir}` filled.
    public var programPath: String {
        var values = ["client-dir": directory]
        values["build-dir"] = buildDirectory
        return ClientTemplate.fill(program, values)
    }

    /// Makes the column.
    ///
    /// - Returns: the client.
    public func client() -> SubprocessClient {
        var capabilities = self.capabilities
        let used = arguments.reduce(into: Set<String>()) { $0.formUnion($1.placeholderNames) }
            .union(environment.values.flatMap(ClientTemplate.names(in:)))
        if used.contains("authorization") { capabilities.insert(.authorization) }
        let definition = self
        let prepare: (@Sendable () async -> String?)? = build.map { build in
            let (directory, clientDirectory) = (buildDirectory ?? "", self.directory)
            return { await build.prepare(directory: directory, clientDirectory: clientDirectory) }
        }
        let made = SubprocessClient(
            name: name, program: programPath, capabilities: capabilities,
            invocation: invocationOverride ?? invocation, transientExitCodes: transientExitCodes,
            probe: versionArguments.isEmpty ? nil : Self.versionProbe(versionArguments), prepare: prepare,
            buildStamp: buildDirectory.map { "\($0)/\(ClientBuild.stampName)" }, servedOver: servedOver,
            tlsLimitation: used.contains("cafile") ? nil : "its \(source) has no {cafile}",
            environment: { job in definition.environment(for: job) },
            inputFiles: { job in definition.inputFiles(for: job) },
            versionArguments: versionArguments.isEmpty ? nil : versionArguments,
            arguments: { job in definition.arguments(for: job) }
        )
        return protocols.map { made.speaking($0, priorKnowledge: h2cArguments) } ?? made
    }

    /// The availability check of a column with a version command: a library's column runs an interpreter that is
    /// there without the library, and its version command (an import) says so; the column is then skipped with that
    /// line.
    static func versionProbe(_ arguments: [String]) -> @Sendable (String) async -> String? {
        { path in
            // One that did not answer in time (a starved machine) is not called missing: the column runs.
            guard let printed = await ChildProcess.capture(path, arguments, limit: .seconds(30)) else { return nil }
            guard printed.status == 0 else {
                let last = printed.output.split(separator: "\n").last.map(String.init) ?? ""
                return "its version command failed (exit \(printed.status)): \(last.prefix(200))"
            }
            return nil
        }
    }

    /// The placeholder values of `job` (the first transfer's for the per-transfer ones).
    func values(for job: ClientJob) -> [String: String] {
        var values: [String: String] = [
            "state": job.stateDirectory, "client-dir": directory,
            "connect-timeout": String(SubprocessClient.seconds(job.connectTimeout)),
            "idle-timeout": String(SubprocessClient.seconds(job.idleTimeout)),
            "concurrency": String(job.concurrency),
        ]
        values["build-dir"] = buildDirectory
        if let first = job.transfers.first { values.merge(Self.values(of: first)) { _, new in new } }
        values["cafile"] = job.certificateAuthorityFile
        values["authorization"] = job.authorization
        if let retries = job.retries ?? defaultRetries {
            values["retries"] = String(retries)
            values["tries"] = String(retries + 1)
        }
        if let listFile { values["list-file"] = "\(job.stateDirectory)/\(listFile.name)" }
        return values
    }

    /// One transfer's own placeholder values.
    static func values(of transfer: ClientJob.Transfer) -> [String: String] {
        [
            "url": transfer.url, "output": transfer.output, "output-dir": transfer.directory,
            "output-name": (transfer.output as NSString).lastPathComponent,
        ]
    }

    /// The arguments for `job`.
    public func arguments(for job: ClientJob) -> [String] {
        ClientTemplate.render(
            arguments, shape: .init(job), values: values(for: job), transfers: job.transfers.map(Self.values(of:)))
    }

    /// The environment additions for `job`.
    public func environment(for job: ClientJob) -> [String: String] {
        let values = values(for: job)
        return environment.compactMapValues { value in
            ClientTemplate.names(in: value).allSatisfy { values[$0] != nil } ? ClientTemplate.fill(value, values) : nil
        }
    }

    /// The list file for `job`, when its arguments name it.
    public func inputFiles(for job: ClientJob) -> [String: String] {
        let values = values(for: job)
        guard let listFile, let path = values["list-file"], arguments(for: job).contains(where: { $0.contains(path) })
        else { return [:] }
        let entries = job.transfers.map {
            ClientTemplate.fill(listFile.entry, values.merging(Self.values(of: $0)) { _, new in new })
        }
        return [path: entries.joined()]
    }

    /// The invocation line reports show: the one-file command with placeholders as `URL`, `OUTPUT`, `CA`, …
    /// (optional parts in brackets), the other shapes it takes, and when the harness runs it again.
    public var invocation: String {
        let symbols: [String: String] = [
            "url": "URL", "output": "OUTPUT", "output-dir": "DIR", "output-name": "NAME", "state": "STATE",
            "cafile": "CA", "authorization": "AUTH", "retries": defaultRetries.map(String.init) ?? "N",
            "tries": defaultRetries.map { String($0 + 1) } ?? "N+1", "connect-timeout": "5", "idle-timeout": "5",
            "concurrency": "N", "list-file": "LIST", "client-dir": directory, "build-dir": "BUILD",
        ]
        let one = ClientTemplate.describe(arguments, shape: .one, symbols: symbols)
        let program = ClientTemplate.fill(self.program, symbols)
        func line(_ shape: ClientTemplate.Shape) -> String {
            ([program] + one).joined(separator: " ")
        }
        /// Another shape's words past those it shares with one file's.
        func tail(_ shape: ClientTemplate.Shape) -> String {
            let words = ClientTemplate.describe(arguments, shape: shape, symbols: symbols)
            // Two shared words kept before the first difference, so the tail reads in its context.
            let shared = max(0, zip(words, one).prefix { $0 == $1 }.count - 2)
            return (shared > 0 ? "… " : "\(program) ") + words.dropFirst(shared).joined(separator: " ")
        }
        let environment = self.environment.sorted { $0.key < $1.key }.map {
            "[\($0.key)=\(ClientTemplate.fill($0.value, symbols))] "
        }.joined()
        var text = environment + line(.one)
        if capabilities.contains(.multipleFiles) { text += " (several files: \(tail(.several)))" }
        if capabilities.contains(.serverNamedOutput) { text += " (named by the server: \(tail(.named)))" }
        text +=
            transientExitCodes.isEmpty
            ? "; never re-run" : "; re-run on exit \(TransientExits.describe(transientExitCodes))"
        return text
    }
}
