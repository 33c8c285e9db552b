import Foundation

/// The subprocess columns written in Swift: `rangefetch` (whose SIGINT pause a definition file cannot state) and a
/// user's `--client-command`. The peers (curl, wget, wget2, aria2c, axel and their segmented columns) are definition
/// files in `fixtures/clients` (``ClientDefinition``). The harness adds only the re-run loop (`transientExitCodes`,
/// one second apart, at most `ClientJob.attempts` runs per start).
extension SubprocessClient {
    static func seconds(_ duration: Duration) -> Int { max(1, Int(duration.components.seconds)) }

    /// `[flag, FILE]` when the job has a CA file, else nothing.
    static func trust(_ job: ClientJob, _ flag: String) -> [String] {
        job.certificateAuthorityFile.map { [flag, $0] } ?? []
    }

    /// `[flag, "Authorization: VALUE"]` when the job has an Authorization, else nothing.
    static func authorization(_ job: ClientJob, _ flag: String) -> [String] {
        job.authorization.map { [flag, "Authorization: \($0)"] } ?? []
    }

    /// `rangefetch --output OUTPUT --state STATE --idle-timeout IDLE --connect-timeout 5s [--cacert CA] URL` (with
    /// several
    /// files: `--output DIR -j N URL...`; named by the server: `-J --output DIR/ URL`), found next to `rangecheck` or
    /// on PATH. It retries by itself, so it is never re-run; SIGINT pauses it (exit 130) and running it again
    /// resumes.
    ///
    /// - Parameters:
    ///   - directory: the directory searched before PATH (where `rangecheck` itself lives).
    /// - Returns: the client.
    ///   - connections: `-x`: above 1 the column is `rangefetch-xN` and segmented.
    public static func rangefetch(nextTo directory: String?, connections: Int = 1) -> SubprocessClient {
        var capabilities: ClientCapabilities = [
            .killAndRestart, .pauseAndResume, .multipleFiles, .authorization, .serverNamedOutput,
        ]
        if connections > 1 { capabilities.insert(.segmented) }
        let split = connections > 1 ? "-x \(connections) " : ""
        return SubprocessClient(
            name: connections > 1 ? "rangefetch-x\(connections)" : "rangefetch", program: "rangefetch",
            preferredDirectories: directory.map { [$0] } ?? [],
            capabilities: capabilities,
            invocation: "rangefetch \(split)--output OUTPUT --state STATE --idle-timeout 5s --connect-timeout 5s "
                + "[--cacert CA] [-H 'Authorization: AUTH'] URL (named by the server: -J --output DIR/ URL) "
                + "(its own retries; SIGINT pauses, exit 130); a row's connect-timeout replaces 5s, its retries "
                + "add --retries N",
            transientExitCodes: [], pausedExitCode: 130,
            probe: { path in
                // main carries a placeholder rangefetch until the engine branch is merged.
                guard let help = await ChildProcess.capture(path, ["--help"]), help.output.contains("--state") else {
                    return "\(path) is a placeholder, not the DownloadEngine CLI (engine not merged)"
                }
                return nil
            }
        ) { job in
            var arguments = [
                "--state", job.stateDirectory, "--idle-timeout", "\(seconds(job.idleTimeout))s", "--connect-timeout",
                "\(seconds(job.connectTimeout))s",
            ]
            if let retries = job.retries { arguments += ["--retries", String(retries)] }
            if connections > 1 { arguments += ["-x", String(connections)] }
            arguments += trust(job, "--cacert") + authorization(job, "--header")
            if job.namesFromServer {
                // The directory, with the '/' that tells -J it is one even before it exists.
                arguments += ["-J", "--output", job.transfers[0].directory + "/", job.transfers[0].url]
            } else if job.transfers.count == 1 {
                arguments += ["--output", job.transfers[0].output, job.transfers[0].url]
            } else {
                let directory = (job.transfers[0].output as NSString).deletingLastPathComponent
                arguments += ["--output", directory, "-j", String(job.concurrency)] + job.transfers.map(\.url)
            }
            return arguments
        }
        // The engine's protocols: h2 over TLS by ALPN; AsyncHTTPClient has no cleartext HTTP/2.
        .speaking(["http/1.1", "h2"])
    }

    /// A downloader the user brings, from `NAME=TEMPLATE` (`mytool=mytool --out {output} {url}`).
    ///
    /// The template is split into words like a shell would (single and double quotes, backslash), then
    /// `{url}`, `{output}`, `{output-dir}` (the output's directory), `{state}`, `{cafile}` (the server's CA file, empty
    /// when the server has no TLS) and `{authorization}` (a row's Authorization value, empty when it has none) are
    /// replaced in each word; no shell runs it. A template without `{cafile}` is n/a for every row over TLS, one
    /// without `{authorization}` for the rows that hand out an Authorization. A template with `{output-dir}` and
    /// without `{output}` lets the client name its file: it runs in that directory and takes the rows whose client
    /// names its output from the server (`output-names`), which every other template is n/a for. It runs
    /// once per start: only an exit in `transient` is re-run, one second apart, up to the job's attempts (none by
    /// default: a client owns its retries). One URL per run, so several-file scenarios are n/a.
    ///
    /// - Parameters:
    ///   - specification: `NAME=TEMPLATE`.
    ///   - transient: the exit statuses the harness re-runs (`--transient NAME=CODES`).
    /// - Returns: the client.
    /// - Throws: `ConformanceError.invalidArgument` for a missing name, an empty template, unbalanced quotes
    ///   or a template without `{url}`.
    public static func command(
        _ specification: String, transient: Set<Int32> = []
    ) throws(ConformanceError) -> SubprocessClient {
        guard let equals = specification.firstIndex(of: "="), equals != specification.startIndex else {
            throw .invalidArgument("--client-command \(specification): expected NAME=TEMPLATE")
        }
        let name = String(specification[..<equals])
        let template = String(specification[specification.index(after: equals)...])
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw .invalidArgument("--client-command \(name): the name may use letters, digits, '-', '_' and '.'")
        }
        guard let words = shellWords(template), let program = words.first else {
            throw .invalidArgument("--client-command \(name): the template is empty or has unbalanced quotes")
        }
        guard template.contains("{url}") else {
            throw .invalidArgument("--client-command \(name): the template needs {url}")
        }
        if let unknown = ClientTemplate.names(in: template).first(where: { ClientTemplate.placeholders[$0] == nil }) {
            throw .invalidArgument("--client-command \(name): unknown placeholder {\(unknown)}")
        }
        // An inline definition: one word per template word, the steps the placeholders allow.
        var capabilities: ClientCapabilities = [.killAndRestart]
        if template.contains("{output}") { capabilities.insert(.prefilledOutput) }
        if template.contains("{output-dir}") && !template.contains("{output}") {
            capabilities.insert(.serverNamedOutput)
        }
        var definition = ClientDefinition(
            name: name, description: "--client-command \(name)", program: program, versionArguments: [],
            package: .init(registry: "none", name: ""), capabilities: capabilities, transientExitCodes: transient,
            defaultRetries: nil, arguments: words.dropFirst().map { .word($0) }, environment: [:], listFile: nil)
        definition.invocationOverride =
            template + (transient.isEmpty ? "; never re-run" : "; re-run on exit \(TransientExits.describe(transient))")
        definition.source = "template"
        definition.protocols = nil
        return definition.client()
    }

    /// Splits a command line into words: whitespace separates, quotes group, backslash escapes.
    ///
    /// - Parameters:
    ///   - text: the command line.
    /// - Returns: the words, or nil for unbalanced quotes.
    public static func shellWords(_ text: String) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
                inWord = true
            } else if character == "\\" && quote != "'" {
                escaped = true
            } else if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character.isWhitespace {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(current) }
        return words
    }
}
