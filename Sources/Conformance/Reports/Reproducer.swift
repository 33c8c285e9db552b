import Foundation
import RangeServer

/// How to reproduce a cell by hand: the `rangeserver` to start, what to put in place, the client's command with the
/// run's URL, the scenario's steps in words, and what to compare.
///
/// Built for every cell that is not a pass, by ``make(entry:run:job:client:server:directory:expectedSHA256:observed:kept:)``,
/// a pure function of plain values: the row, the run token, the reproduction's job (``job(entry:run:server:directory:idleTimeout:attempts:)``),
/// the client's command for that job and the server's settings. The reproduction runs on its own ports (8080 by
/// default) and in its own directory, with the run's own token, so its journal query names the same run the cell
/// was judged from.
public struct Reproducer: Codable, Hashable, Sendable {
    /// The `rangeserver` command line, run first (in a terminal of its own).
    public var server: String
    /// Commands run once the server is up, before the client: a fresh directory, the files the client reads, a
    /// prefilled output.
    public var setup: [String]
    /// The client's command line, or for a client that has none, what to do in words.
    public var client: String
    /// Whether ``client`` is a command line (false: words, for a client in process or a tester's own).
    public var clientIsCommand: Bool
    /// What the client command stands in for, when it is not the column's own program (the in-process engine).
    public var note: String?
    /// The scenario's steps in words, in order (`kill -9 the client once 25% ...`); empty when it has none.
    public var steps: [String]
    /// What to compare once the client has finished.
    public var compare: Comparison
    /// The reproduction's directory (outputs, state, the server's CA).
    public var directory: String
    /// The directory the harness kept for the run itself (`--keep`): its outputs, logs and `journal.jsonl`; nil when
    /// it was removed.
    public var kept: String?

    /// Applies `transform` to every text of the reproducer (commands, words, paths), in place: for writing its paths
    /// relative to a checkout, or with placeholders.
    ///
    /// - Parameters:
    ///   - transform: the change to each text.
    public mutating func map(_ transform: (String) -> String) {
        server = transform(server)
        setup = setup.map(transform)
        client = transform(client)
        note = note.map(transform)
        steps = steps.map(transform)
        compare.expected = transform(compare.expected)
        compare.sha256 = compare.sha256.map(transform)
        compare.outputs = compare.outputs.map(transform)
        compare.rules = compare.rules.map(transform)
        compare.journal = transform(compare.journal)
        compare.observed = transform(compare.observed)
        directory = transform(directory)
        kept = kept.map(transform)
    }

    /// What a run that conforms shows, and what this one showed.
    public struct Comparison: Codable, Hashable, Sendable {
        /// How the client must end, in words (`exits 0 with every output's SHA-256 as below`).
        public var expected: String
        /// The expected SHA-256 (lower-case hex) of the representation each output must hold; nil when the row
        /// expects no complete output.
        public var sha256: String?
        /// The outputs to check (`sha256sum` them).
        public var outputs: [String]
        /// The row's other rules, each in words, checked against the journal (requests, ranges, validators, time).
        public var rules: [String]
        /// The command that prints the run's journal once its requests have ended.
        public var journal: String
        /// What this run did: the cell's reason.
        public var observed: String
    }

    /// The server a reproduction starts: the harness's catalogue on fixed ports.
    public struct Server: Hashable, Sendable {
        /// `rangeserver`: a path, or the name on PATH.
        public var program = "rangeserver"
        /// The scenario directory the run's server loaded.
        public var scenariosDirectory: String
        /// The directory served under `/files/`.
        public var root: String
        /// The address to bind (`--host`, given only when it is not 127.0.0.1).
        public var host = "127.0.0.1"
        /// The host in the URLs the client is given.
        public var urlHost = "127.0.0.1"
        /// The plain port.
        public var port = 8080
        /// The TLS port, given when the run was over https.
        public var tlsPort = 8443
        /// The HTTP/2 TLS port, given when the run was over h2.
        public var h2Port = 8444
        /// The cleartext HTTP/2 port, given when the run was over h2c.
        public var h2cPort = 8082
        /// The blackhole port, given when the row sends the client there (`entry: blackhole`).
        public var blackholePort = 8081
        /// The scheme the run was over.
        public var scheme = MatrixScheme.http
        /// Whether the run was over https; setting it picks https or http.
        public var tls: Bool {
            get { scheme == .https }
            set { scheme = newValue ? .https : .http }
        }
        /// Whether the run's server had a CA the client was told to trust (an https run, or a catalogue with rows
        /// that redirect to https): the reproduction keeps it in `DIRECTORY/tls` (`--tls-dir`).
        public var certificateAuthority = false

        /// Makes the settings.
        ///
        /// - Parameters:
        ///   - scenariosDirectory: the scenario directory.
        ///   - root: the files root.
        public init(scenariosDirectory: String, root: String) {
            self.scenariosDirectory = scenariosDirectory
            self.root = root
        }
    }

    /// Who runs the client.
    public enum Client: Hashable, Sendable {
        /// A command line (a subprocess column, or the `rangefetch` standing in for the engine).
        case command(ClientCommand)
        /// A client in process with no command line: its invocation.
        case invocation(name: String, invocation: String)
        /// A tester's own client, reporting to `rangecheck serve`: its label.
        case remote(label: String)
    }

    /// The reproduction's job: the run's URLs on the reproduction's server, outputs and state under `directory`,
    /// the row's timeouts, and the CA in `directory/tls` when the server has one.
    ///
    /// - Parameters:
    ///   - entry: the row.
    ///   - run: the run token.
    ///   - server: the reproduction's server.
    ///   - directory: the reproduction's directory.
    ///   - idleTimeout: the idle timeout the harness gave.
    ///   - attempts: the runs per start the harness allowed.
    /// - Returns: the job.
    public static func job(
        entry: CatalogueEntry, run: String, server: Server, directory: String, idleTimeout: Duration = .seconds(5),
        attempts: Int = 5
    ) -> ClientJob {
        let expectation = entry.expectation
        let origin: String
        if expectation.entry == .blackhole {
            origin = "\(server.scheme.urlScheme)://\(server.urlHost):\(server.blackholePort)"
        } else if expectation.entry == .deadIPv6 {
            origin = "http://\(ClientWorld.dualStackName):\(server.port)"
        } else {
            let port: Int
            switch server.scheme {
            case .http: port = server.port
            case .https: port = server.tlsPort
            case .h2: port = server.h2Port
            case .h2c: port = server.h2cPort
            }
            origin = "\(server.scheme.urlScheme)://\(server.urlHost):\(port)"
        }
        var job = ClientJob(
            transfers: entry.transfers(base: "\(origin)/scenario/\(entry.name)/\(run)", outputs: "\(directory)/out"),
            stateDirectory: "\(directory)/state", logDirectory: "\(directory)/logs",
            concurrency: expectation.concurrency ?? 1, idleTimeout: idleTimeout, attempts: attempts)
        job.configure(for: expectation)
        if server.certificateAuthority { job.certificateAuthorityFile = "\(directory)/tls/ca.pem" }
        return job
    }

    /// The reproducer of a cell.
    ///
    /// - Parameters:
    ///   - entry: the row.
    ///   - run: the run token (the journal's `run`).
    ///   - job: the reproduction's job, from ``job(entry:run:server:directory:idleTimeout:attempts:)``.
    ///   - client: the client's command for `job`, or who runs it.
    ///   - server: the reproduction's server.
    ///   - directory: the reproduction's directory.
    ///   - expectedSHA256: the digest of the expected representation (`expect.sha256` wins when the row has one).
    ///   - observed: what the run did (the cell's reason).
    ///   - kept: the run's kept directory, if any.
    /// - Returns: the reproducer.
    public static func make(
        entry: CatalogueEntry, run: String, job: ClientJob, client: Client, server: Server, directory: String,
        expectedSHA256: String?, observed: String, kept: String? = nil
    ) -> Reproducer {
        let (clientLine, note, pausesOnInterrupt, files) = describe(client, job: job)
        let isCommand = if case .command = client { true } else { false }
        return Reproducer(
            server: serverLine(entry: entry, server: server, directory: directory),
            setup: setup(entry: entry, job: job, server: server, files: files),
            client: clientLine, clientIsCommand: isCommand, note: note,
            steps: steps(entry: entry, job: job, client: client, pausesOnInterrupt: pausesOnInterrupt),
            compare: comparison(
                entry: entry, run: run, job: job, server: server, expectedSHA256: expectedSHA256, observed: observed),
            directory: directory, kept: kept)
    }

    /// `rangeserver --scenarios DIR --root ROOT --port 8080`, with the TLS port for an https run, the blackhole port
    /// for a row sent there, and `--tls-dir` when the client must trust the server's CA.
    static func serverLine(entry: CatalogueEntry, server: Server, directory: String) -> String {
        var words = [server.program, "--scenarios", server.scenariosDirectory, "--root", server.root]
        if server.host != "127.0.0.1" { words += ["--host", server.host] }
        words += ["--port", String(server.port)]
        switch server.scheme {
        case .http: break
        case .https: words += ["--tls-port", String(server.tlsPort)]
        case .h2: words += ["--h2-port", String(server.h2Port)]
        case .h2c: words += ["--h2c-port", String(server.h2cPort)]
        }
        if entry.expectation.entry == .blackhole { words += ["--blackhole-port", String(server.blackholePort)] }
        if server.certificateAuthority { words += ["--tls-dir", "\(directory)/tls"] }
        return ShellQuoting.line(words)
    }

    /// A fresh output and state directory, the client's input files, and each output's prefill fetched from the
    /// server's plain port.
    static func setup(entry: CatalogueEntry, job: ClientJob, server: Server, files: [String: String]) -> [String] {
        let outputs = Set(job.transfers.map { ($0.output as NSString).deletingLastPathComponent }).sorted()
        let directories = outputs + [job.stateDirectory]
        var lines = [
            "rm -rf \(ShellQuoting.line(directories)) && mkdir -p \(ShellQuoting.line(directories))"
        ]
        for (path, contents) in files.sorted(by: { $0.key < $1.key }) {
            lines.append("printf '%s' \(ShellQuoting.quoted(contents)) > \(ShellQuoting.quoted(path))")
        }
        for step in entry.expectation.steps {
            guard case .prefill(let threshold) = step else { continue }
            let count = min(threshold.bytes(of: entry.reference.length), entry.reference.length)
            guard count > 0 else { continue }
            let url = "http://\(server.urlHost):\(server.port)" + resource(entry)
            for transfer in job.transfers {
                lines.append(
                    ShellQuoting.line(["curl", "-sS", "-f", "-r", "0-\(count - 1)", "-o", transfer.output, url])
                        + "  # prefill: the first \(threshold.text) (\(count) bytes) of version \(entry.expectedVersion)"
                )
            }
        }
        return lines
    }

    /// The row's resource at the expected version: `/bytes/8M?seed=7&version=2`, or the `/files/` path as it is.
    static func resource(_ entry: CatalogueEntry) -> String {
        let resource = entry.scenario.resource
        guard case .generated = entry.reference else { return resource }
        let parts = resource.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query = parts.count > 1 ? parts[1].split(separator: "&").map(String.init) : []
        query.removeAll { $0.hasPrefix("version=") }
        if entry.expectedVersion != 1 { query.append("version=\(entry.expectedVersion)") }
        return String(parts[0]) + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// The client line, the note, whether SIGINT pauses it, and the files it reads.
    private static func describe(
        _ client: Client, job: ClientJob
    ) -> (line: String, note: String?, pausesOnInterrupt: Bool, files: [String: String]) {
        switch client {
        case .command(let command):
            return (command.line, command.standsFor, command.pausesOnInterrupt, command.files)
        case .invocation(let name, let invocation):
            let targets = job.transfers.map { "\($0.url) to \($0.output)" }.joined(separator: ", ")
            return (
                "with \(name) (\(invocation)), download \(targets)", "\(name) runs in process; no command line", false,
                [:]
            )
        case .remote(let label):
            let targets = job.transfers.map { "\($0.url) to \($0.output)" }.joined(separator: ", ")
            let trust = job.certificateAuthorityFile.map { ", trusting the CA in \($0)" } ?? ""
            return ("with \(label), as in the run: download \(targets)\(trust)", nil, false, [:])
        }
    }

    /// Each step of the row in words, at the byte count the harness acts at (of every output together).
    static func steps(entry: CatalogueEntry, job: ClientJob, client: Client, pausesOnInterrupt: Bool) -> [String] {
        let total = entry.reference.length * UInt64(job.transfers.count)
        let outputs = Set(job.transfers.map { ($0.output as NSString).deletingLastPathComponent }).sorted()
        let watch = "du -scB1 \(ShellQuoting.line(outputs + [job.stateDirectory])) | tail -n 1"
        let isCommand = if case .command = client { true } else { false }
        // The harness's re-run loop, which a tester does by hand: a user's `until tool; do sleep 1; done`.
        var rerun: [String] = []
        if case .command(let command) = client, !command.rerunOn.isEmpty {
            let codes = command.rerunOn.map(String.init).joined(separator: ", ")
            rerun.append(
                "whenever it exits \(codes), run the same client command again a second later (the harness does, up "
                    + "to \(job.attempts) runs per start)")
        }
        // The dead IPv6 address is a listener of the harness's own and a hosts file in its private mount namespace;
        // rangeserver has no flag for either, so the row is reproduced through rangecheck.
        let world =
            entry.expectation.entry == .deadIPv6
            ? [
                "this row needs the harness's dead [::1] listener and its hosts file naming "
                    + "\(ClientWorld.dualStackName) (both only inside rangecheck's own mount namespace, as root): "
                    + "reproduce it with `rangecheck --scenario \(entry.name) --client NAME --keep`, which keeps the "
                    + "run's outputs, logs and journal"
            ] : []
        return world + rerun
            + entry.expectation.steps.compactMap { step -> String? in
                let threshold = MatrixRunner.threshold(of: step)
                let once =
                    "once \(threshold.text) (\(threshold.bytes(of: total)) of \(total) bytes) is on disk (`\(watch)`)"
                switch step {
                case .prefill: return nil
                case .diskFull(let size):
                    // The harness mounts in a private mount namespace; by hand, as root, a tmpfs over both directories.
                    let directories = ShellQuoting.line(outputs + [job.stateDirectory])
                    return "before the first run, as root, put the client's directories on a filesystem with "
                        + "\(ByteSize.format(size)) of room (`for d in \(directories); do mount -t tmpfs -o "
                        + "size=\(size) tmpfs \"$d\"; done`, one each, \(ByteSize.format(size)) in all is the harness's "
                        + "setting); once the client has ended, give them room (`mount -o remount,size=1G` each) and run "
                        + "the same client command again; unmount them afterwards"
                case .killAndRestart:
                    return isCommand
                        ? "kill -9 the client \(once), then run the same client command again"
                        : "kill the client's process \(once), then start the same download again"
                case .pause(_, let duration):
                    return pausesOnInterrupt
                        ? "press Ctrl-C (SIGINT: it pauses and exits) \(once), wait \(Judge.seconds(duration)), then run "
                            + "the same client command again"
                        : "pause the download \(once), wait \(Judge.seconds(duration)), then resume it"
                // The engine's cancel has no rangefetch flag: Ctrl-C there pauses and keeps the partial file.
                case .cancel:
                    return isCommand
                        ? "cancel the download \(once): DownloadEngine.cancel(_:), which this command has no flag for "
                            + "(Ctrl-C pauses it and keeps the partial file)"
                        : "cancel the download \(once)"
                }
            }
    }

    /// How the run must end and the row's rules, the journal query, and what the run did.
    static func comparison(
        entry: CatalogueEntry, run: String, job: ClientJob, server: Server, expectedSHA256: String?, observed: String
    ) -> Comparison {
        let expectation = entry.expectation
        let digest = expectation.sha256 ?? expectedSHA256
        // Without a digest (a resource too large to hash while reporting), the server's own bytes are the reference.
        let reference = ShellQuoting.line(["curl", "-sS", "http://\(server.urlHost):\(server.port)" + resource(entry)])
        let version =
            digest == nil
            ? " (`\(reference) | sha256sum`)"
            : expectation.sha256 == nil ? " (version \(entry.expectedVersion) of \(entry.scenario.resource))" : ""
        let target = (digest == nil ? "that of the representation" : "the one below") + version
        let leaves = expectation.leavesNoOutput ? ", and leaves no output file (an empty one is allowed)" : ""
        var expected: String
        var sha256: String? = digest
        switch expectation.outcome {
        case .success:
            expected = "the client exits 0 and every output's SHA-256 is \(target)"
        case .intact:
            expected =
                "either the client exits 0 and every output's SHA-256 is \(target), or it reports "
                + "failure and no output holds other bytes"
        case .failure(let kind):
            expected = "the client reports failure (\(kind == "any" ? "any kind" : kind))\(leaves)"
            sha256 = nil
        case .cancelled:
            expected = "the client reports the download cancelled\(leaves)"
            sha256 = nil
        }
        // A client that names its output: either allowed name may hold it, and no other copy may be left under one.
        var outputs = job.transfers.map(\.output)
        if let names = expectation.outputNames, let directory = job.transfers.first?.directory {
            outputs = names.map { "\(directory)/\($0)" }
            if sha256 != nil {
                expected =
                    "the client exits 0 and one of \(names.joined(separator: ", ")) in \(directory) has the SHA-256 "
                    + "\(target), with no partial copy left under another of those names"
            }
        }
        let query = "run=\(percentEncoded(run))&settled=2s"
        let journal = ShellQuoting.line(["curl", "-sS", "\(controlOrigin(server))/_control/journal?\(query)"])
        return Comparison(
            expected: expected, sha256: sha256, outputs: outputs, rules: rules(expectation),
            journal: journal, observed: observed)
    }

    /// The row's bounds and resume rules in words, for reading the journal.
    static func rules(_ expectation: ScenarioExpectation) -> [String] {
        var rules: [String] = []
        switch expectation.range {
        case .any: break
        case .exact: rules.append("after an interruption the next request's Range starts exactly at the bytes kept")
        case .atMost: rules.append("after an interruption the client resumes with a Range at or before the bytes kept")
        case .forbidden: rules.append("no request carries Range: the row has no safe validator, so a restart is right")
        }
        switch expectation.ifRange {
        case .any: break
        case .etag: rules.append("every Range carries If-Range with the strong ETag of the kept bytes")
        case .lastModified: rules.append("every Range carries If-Range with the Last-Modified date of the kept bytes")
        }
        if let count = expectation.maxRequests { rules.append("at most \(count) GET requests, redirects included") }
        if let bytes = expectation.maxRefetched { rules.append("at most \(ByteSize.format(bytes)) sent twice") }
        if let count = expectation.maxConnections { rules.append("at most \(count) connections at once") }
        if let duration = expectation.minElapsed { rules.append("takes at least \(Judge.seconds(duration))") }
        if let duration = expectation.maxElapsed { rules.append("takes at most \(Judge.seconds(duration))") }
        return rules
    }

    /// Where the control API answers: the plain port on loopback (it answers loopback peers only), or on the
    /// address bound when that is one address.
    static func controlOrigin(_ server: Server) -> String {
        switch server.host {
        case "0.0.0.0", "127.0.0.1": "http://127.0.0.1:\(server.port)"
        case "::", "::1": "http://[::1]:\(server.port)"
        case let host: "http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)"
        }
    }

    private static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
