import Foundation

/// The bundled subprocess columns. Each documents its exact invocation; the harness adds only the
/// re-run loop (`transientExitCodes`, one second apart, at most `ClientJob.attempts` runs per start), and only for
/// the exit statuses the tool's own documentation calls transient (docs/conformance.md names each, with the
/// documentation's words). A row's
/// `connect-timeout` and `retries` replace the connect timeout (5 s) and the retry counts shown, where a client has
/// such settings. When the server has TLS, each is given its CA file (`ClientJob.certificateAuthorityFile`) the
/// way its users would: `--cacert`, `--ca-certificate=`, or OpenSSL's `SSL_CERT_FILE` for axel.
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

    /// `[flag=Authorization: VALUE]` when the job has an Authorization, else nothing.
    static func authorization(_ job: ClientJob, joined flag: String) -> [String] {
        job.authorization.map { ["\(flag)=Authorization: \($0)"] } ?? []
    }

    /// `[flag=FILE]` when the job has a CA file, else nothing.
    static func trust(_ job: ClientJob, joined flag: String) -> [String] {
        job.certificateAuthorityFile.map { ["\(flag)=\($0)"] } ?? []
    }

    /// `curl -sS -f -L --max-redirs 10 -C - --retry 3 --connect-timeout 5 --speed-limit 1 --speed-time IDLE
    /// [--cacert CA] -o OUTPUT URL` (with several files: `--parallel --parallel-max N` and one `-o OUTPUT URL` pair
    /// per file).
    /// Re-run on exit 28 (operation timeout) only: curl's manual calls "a timeout" transient (`--retry`); of its exit
    /// codes that is the one that never stands for a permanent error too.
    ///
    /// A row whose client names its output from the server (`output-names`) gets `-O -J --output-dir DIR URL`
    /// instead of `-o OUTPUT URL`, and no `-C -`: curl refuses to combine `--continue-at` with
    /// `--remote-header-name`, so it cannot resume such a download.
    public static let curl = SubprocessClient(
        name: "curl", program: "curl",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "curl -sS -f -L --max-redirs 10 -C - --retry 3 --connect-timeout 5 --speed-limit 1 "
            + "--speed-time 5 [--cacert CA] [-H 'Authorization: AUTH'] -o OUTPUT URL (named by the server: "
            + "-O -J --output-dir DIR URL, without -C -); re-run on exit 28; a row's connect-timeout and "
            + "retries replace 5 and 3",
        transientExitCodes: [28]
    ) { job in
        var arguments = ["--silent", "--show-error", "--fail", "--location", "--max-redirs", "10"]
        if !job.namesFromServer { arguments += ["--continue-at", "-"] }
        arguments += [
            "--retry", String(job.retries ?? 3), "--connect-timeout", String(seconds(job.connectTimeout)),
            "--speed-limit", "1", "--speed-time",
            String(seconds(job.idleTimeout)),
        ]
        arguments += trust(job, "--cacert") + authorization(job, "--header")
        if job.transfers.count > 1 { arguments += ["--parallel", "--parallel-max", String(job.concurrency)] }
        for transfer in job.transfers {
            arguments +=
                job.namesFromServer
                ? ["--remote-name", "--remote-header-name", "--output-dir", transfer.directory, transfer.url]
                : ["--output", transfer.output, transfer.url]
        }
        return arguments
    }

    /// `wget -nv -c --tries=3 --waitretry=1 --timeout=IDLE --connect-timeout=5 --max-redirect=10
    /// --retry-on-http-error=429,500,502,503,504 [--ca-certificate=CA] -O OUTPUT URL` (with several files: `-P DIR` and the URLs,
    /// fetched one after the other). Re-run on exit 4 ("Network failure" in wget's manual), whose `--continue` is
    /// documented for finishing "a download started by a previous instance of Wget".
    public static let wget = SubprocessClient(
        name: "wget", program: "wget",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "wget -nv -c --tries=3 --waitretry=1 --timeout=5 --connect-timeout=5 --max-redirect=10 "
            + "--retry-on-http-error=429,500,502,503,504 [--ca-certificate=CA] [--header='Authorization: AUTH'] -O OUTPUT URL (named by the server: "
            + "--content-disposition -P DIR URL); re-run on exit 4; a row's "
            + "connect-timeout replaces 5, its retries N give N + 1 tries",
        transientExitCodes: [4]
    ) { job in
        let arguments = [
            "--no-verbose", "--continue", "--tries=\((job.retries ?? 2) + 1)", "--waitretry=1",
            "--timeout=\(seconds(job.idleTimeout))", "--connect-timeout=\(seconds(job.connectTimeout))",
            "--max-redirect=10", "--retry-on-http-error=429,500,502,503,504",
        ]
        return arguments + trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            + wgetOutputs(job)
    }

    /// wget's and wget2's tail: `-O OUTPUT URL` for one file, `-P DIR URL...` for several (named by the URL), and
    /// `--content-disposition -P DIR URL` for a file the server names.
    static func wgetOutputs(_ job: ClientJob) -> [String] {
        if job.namesFromServer {
            return ["--content-disposition", "--directory-prefix", job.transfers[0].directory, job.transfers[0].url]
        }
        if job.transfers.count == 1 { return ["--output-document", job.transfers[0].output, job.transfers[0].url] }
        let directory = (job.transfers[0].output as NSString).deletingLastPathComponent
        return ["--directory-prefix", directory] + job.transfers.map(\.url)
    }

    /// `aria2c -c -x1 -s1 --file-allocation=none --auto-file-renaming=false --max-tries=3 --retry-wait=1
    /// --timeout=IDLE --connect-timeout=5 --max-file-not-found=1 [--ca-certificate=CA] -d DIR -o NAME URL` (with several files:
    /// `-i LIST -j N`). Re-run on exit 2, 6 and 29 (aria2c's manual: "time out", "network problem", and a server
    /// "unable to handle the request due to a temporary overloading or maintenance"); not on 7, unfinished downloads
    /// after a Ctrl-C, TERM or INT, which the harness never sends.
    public static let aria2c = aria2c(name: "aria2c", connections: 1)

    /// The segmented aria2c column: like `aria2c`, with `-x4 -s4 -k1M`, so one file is fetched over up to four
    /// connections in 1 MiB pieces and resumed from its `.aria2` control file (which records no validator).
    public static let aria2cSegmented = aria2c(name: "aria2c-x4", connections: 4)

    /// An aria2c column fetching each file over `connections` connections.
    static func aria2c(name: String, connections: Int) -> SubprocessClient {
        let split = connections == 1 ? "-x1 -s1" : "-x\(connections) -s\(connections) -k1M"
        var capabilities: ClientCapabilities = [
            .killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput,
        ]
        if connections > 1 { capabilities.insert(.segmented) }
        return SubprocessClient(
            name: name, program: "aria2c", capabilities: capabilities,
            invocation: "aria2c -c \(split) --file-allocation=none --auto-file-renaming=false --max-tries=3 "
                + "--retry-wait=1 --timeout=5 --connect-timeout=5 --max-file-not-found=1 [--ca-certificate=CA] "
                + "[--header='Authorization: AUTH'] -d DIR -o NAME URL (named by the server: no -o); "
                + "re-run on exit 2/6/29; a row's connect-timeout replaces 5, its retries N give N + 1 tries",
            transientExitCodes: [2, 6, 29],
            inputFiles: { job in
                job.transfers.count > 1 ? ["\(job.stateDirectory)/aria2c-input.txt": aria2cInputList(job)] : [:]
            }
        ) { job in
            var arguments = [
                "--continue=true", "--max-connection-per-server=\(connections)", "--split=\(connections)",
                "--file-allocation=none", "--auto-file-renaming=false", "--max-tries=\((job.retries ?? 2) + 1)",
                "--retry-wait=1", "--timeout=\(seconds(job.idleTimeout))",
                "--connect-timeout=\(seconds(job.connectTimeout))", "--max-file-not-found=1",
                "--summary-interval=0", "--console-log-level=warn", "--download-result=hide",
            ]
            if connections > 1 { arguments.append("--min-split-size=1M") }
            arguments += trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            if job.namesFromServer {
                // Without --out aria2c takes the name from Content-Disposition, else from the URL.
                arguments += ["--dir", job.transfers[0].directory, job.transfers[0].url]
            } else if job.transfers.count == 1 {
                let output = job.transfers[0].output as NSString
                arguments += [
                    "--dir", output.deletingLastPathComponent, "--out", output.lastPathComponent, job.transfers[0].url,
                ]
            } else {
                arguments += [
                    "--input-file", "\(job.stateDirectory)/aria2c-input.txt", "--max-concurrent-downloads",
                    String(job.concurrency),
                ]
            }
            return arguments
        }
    }

    /// aria2c's `--input-file` for several files: each URL, then its `dir=` and `out=` options indented.
    static func aria2cInputList(_ job: ClientJob) -> String {
        job.transfers.map { transfer in
            let output = transfer.output as NSString
            return "\(transfer.url)\n  dir=\(output.deletingLastPathComponent)\n  out=\(output.lastPathComponent)\n"
        }.joined()
    }

    /// `wget2 -q -c --tries=3 --waitretry=1 --timeout=IDLE --connect-timeout=5 --max-redirect=10
    /// [--ca-certificate=CA] -O OUTPUT URL`
    /// (with several files: `-P DIR` and the URLs). wget2 1.99 has no `--retry-on-http-error`. Re-run on exit 4
    /// ("Network failure" in wget2's manual, as in wget's).
    public static let wget2 = SubprocessClient(
        name: "wget2", program: "wget2",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "wget2 -q -c --tries=3 --waitretry=1 --timeout=5 --connect-timeout=5 --max-redirect=10 "
            + "[--ca-certificate=CA] [--header='Authorization: AUTH'] -O OUTPUT URL (named by the server: "
            + "--content-disposition -P DIR URL, run in DIR); re-run on exit 4; a row's connect-timeout replaces 5, its "
            + "retries N give N + 1 tries",
        transientExitCodes: [4]
    ) { job in
        let arguments = [
            "--quiet", "--continue", "--tries=\((job.retries ?? 2) + 1)", "--waitretry=1",
            "--timeout=\(seconds(job.idleTimeout))", "--connect-timeout=\(seconds(job.connectTimeout))",
            "--max-redirect=10",
        ]
        return arguments + trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            + wgetOutputs(job)
    }

    /// `axel -q -n 1 -T IDLE --max-redirect=10 -o OUTPUT URL`. axel resumes only from its own `OUTPUT.st` state
    /// file, so a prefilled output is n/a; one file per run (several URLs are mirrors to axel). Never re-run: its
    /// manual gives 1 for "something really went wrong" (every failure, a certificate error as much as a dropped
    /// connection) and 2 for an interrupted download, which only a signal the harness never sends makes. axel 2.17
    /// has no CA option (only `--insecure`), but it loads OpenSSL's default trust
    /// (`SSL_CTX_set_default_verify_paths`), so the CA file is given as `SSL_CERT_FILE` in its environment.
    public static let axel = axel(name: "axel", connections: 1)

    /// The segmented axel column: `axel -n 4`, whose state file records the segments' offsets but no validator.
    public static let axelSegmented = axel(name: "axel-n4", connections: 4)

    /// An axel column fetching each file over `connections` connections.
    static func axel(name: String, connections: Int) -> SubprocessClient {
        SubprocessClient(
            name: name, program: "axel",
            capabilities: connections > 1
                ? [.killAndRestart, .segmented, .authorization] : [.killAndRestart, .authorization],
            invocation: "[SSL_CERT_FILE=CA] axel -q -n \(connections) -T 5 --max-redirect=10 "
                + "[--header='Authorization: AUTH'] -o OUTPUT URL; never "
                + "re-run",
            transientExitCodes: [],
            environment: { job in job.certificateAuthorityFile.map { ["SSL_CERT_FILE": $0] } ?? [:] }
        ) { job in
            [
                "--quiet", "--num-connections=\(connections)", "--timeout=\(seconds(job.idleTimeout))",
                "--max-redirect=10",
            ] + authorization(job, joined: "--header") + ["--output=\(job.transfers[0].output)", job.transfers[0].url]
        }
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
        var capabilities: ClientCapabilities = [.killAndRestart]
        if template.contains("{output}") { capabilities.insert(.prefilledOutput) }
        if template.contains("{authorization}") { capabilities.insert(.authorization) }
        if template.contains("{output-dir}") && !template.contains("{output}") {
            capabilities.insert(.serverNamedOutput)
        }
        return SubprocessClient(
            name: name, program: program, capabilities: capabilities,
            invocation: template
                + (transient.isEmpty ? "; never re-run" : "; re-run on exit \(TransientExits.describe(transient))"),
            transientExitCodes: transient,
            tlsLimitation: template.contains("{cafile}") ? nil : "its template has no {cafile}"
        ) { job in
            words.dropFirst().map { word in
                word.replacingOccurrences(of: "{url}", with: job.transfers[0].url)
                    .replacingOccurrences(of: "{output}", with: job.transfers[0].output)
                    .replacingOccurrences(of: "{output-dir}", with: job.transfers[0].directory)
                    .replacingOccurrences(of: "{state}", with: job.stateDirectory)
                    .replacingOccurrences(of: "{cafile}", with: job.certificateAuthorityFile ?? "")
                    .replacingOccurrences(of: "{authorization}", with: job.authorization ?? "")
            }
        }
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
