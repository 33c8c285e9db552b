import ArgumentParser
import DownloadEngine
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The documented exit codes of `rangefetch`.
enum ExitStatus: Int32 {
    case success = 0
    case failure = 1
    case permanentHTTPFailure = 2
    case verificationFailure = 3
    case retriesExhausted = 4
    case usage = 64
    case interrupted = 130

    static func of(_ error: DownloadError) -> ExitStatus {
        switch error {
        case DownloadError.verificationFailed: .verificationFailure
        case DownloadError.permanentHTTPStatus, DownloadError.tooManyRedirects: .permanentHTTPFailure
        case DownloadError.retriesExhausted, DownloadError.deadlineExceeded, DownloadError.tooSlow: .retriesExhausted
        case DownloadError.invalidURL, DownloadError.unsupportedScheme, DownloadError.invalidHeader,
            DownloadError.credentialsRequired, DownloadError.invalidProxy, DownloadError.invalidInputList:
            .usage
        default:
            if error.kind == "redirect-without-location" || error.kind == "unexpected-response" {
                .permanentHTTPFailure
            } else if error.isRetryable {
                .retriesExhausted
            } else {
                .failure
            }
        }
    }
}

@main
struct RangeFetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rangefetch",
        abstract: "Download URLs with resume, retries and verification.",
        discussion: """
            Running the same command again after Ctrl-C or kill -9 resumes from the partial files in the state \
            directory. Ctrl-C pauses: the transfers stop, their records are saved, and rangefetch exits with 130.

            Exit codes:
              0    every download completed and verified
              1    other failure (file system, destination exists, bad or busy state directory, TLS certificate refused)
              2    permanent HTTP failure (4xx, a proxy's refusal, too many redirects, unusable response)
              3    verification failure (length or SHA-256 mismatch)
              4    retries or slow aborts exhausted (or the overall deadline passed)
              64   usage error (bad option, malformed URL, unsupported scheme, bad header or proxy, missing credentials,
                   a bad -i line, two digests for one URL that disagree)
              130  interrupted (paused; run again to resume)
            With several URLs, the code is that of the first failed URL in command-line order.
            """
    )

    @Option(
        name: [.short, .long],
        help: "Output file for one URL, or directory for several (default: the current directory).")
    var output: String?

    @Option(help: "State directory for records and partial files (default: .rangefetch in the output directory).")
    var state: String?

    @Option(name: [.customShort("j"), .long], help: "Maximum concurrent transfers.")
    var concurrency: Int = 4

    @Option(
        name: [.customShort("x"), .long],
        help: """
            Connections per file (1-16): a file whose server supports ranges and sends a strong ETag is fetched in \
            that many segments at once.
            """)
    var connections: Int = 1

    @Option(help: "Expected SHA-256 (hex) of the single URL's content.")
    var sha256: String?

    @Option(help: "A sha256sum-format file of expected digests, matched by output file name.")
    var checksums: String?

    @Option(
        name: [.customShort("i"), .customLong("input-file")],
        help: ArgumentHelp(
            """
            Also download the URLs in this file ('-' for standard input), after those given as arguments: one per \
            line, each followed by indented out=NAME and checksum=sha-256=HEX lines, as in aria2c's input files; \
            blank lines and # comments are ignored. --output is then a directory.
            """, valueName: "file"))
    var inputFile: String?

    @Option(name: .customLong("connect-timeout"), help: "Connect timeout (e.g. 10s, 500ms, 1m).")
    var connectTimeout: String = "10s"

    @Option(name: .customLong("idle-timeout"), help: "Abort and retry an attempt when no bytes arrive for this long.")
    var idleTimeout: String = "30s"

    @Option(help: "Overall deadline per download (default: none).")
    var deadline: String?

    @Option(help: "Retries in a row without progress before giving up.")
    var retries: Int = 10

    /// `--limit-rate`, `--speed-limit`, `--speed-time`, `--slow-retries`.
    @OptionGroup var rates: RateOptions

    @Option(
        help: ArgumentHelp(
            "Also trust the CA certificates (PEM) in this file for https:// (repeatable).", valueName: "file"))
    var cacert: [String] = []

    @Flag(help: "Accept any TLS certificate for any host name (test servers only; never the default).")
    var insecure = false

    @Flag(
        name: .customLong("http1.1"),
        help: "Speak HTTP/1.1 only: over TLS offer http/1.1 alone by ALPN (as curl's --http1.1).")
    var http1Only = false

    @Flag(
        name: .customLong("http2"),
        help: ArgumentHelp(
            "Offer h2 and http/1.1 over TLS and take what the server chooses (the default, as curl's --http2); "
                + "http:// stays HTTP/1.1, since the engine has no cleartext HTTP/2."))
    var http2 = false

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp(
            "Send this request header with every request, as 'Name: value' (repeatable).", valueName: "header"))
    var header: [String] = []

    @Option(name: .customLong("user-agent"), help: "Send this User-Agent (a -H User-Agent wins).")
    var userAgent: String?

    @Flag(
        name: .customLong("store-credentials"),
        help: """
            Store Authorization, Cookie and Proxy-Authorization headers in the state directory (clear text), so a \
            resume after a restart sends them again; without it, such a resume needs them given again.
            """)
    var storeCredentials = false

    @Option(
        help: ArgumentHelp(
            """
            Use this HTTP proxy ([http://][user:password@]host[:port]); '' for none. Default: http_proxy, \
            https_proxy, all_proxy.
            """, valueName: "url"))
    var proxy: String?

    @Option(
        help: ArgumentHelp(
            "Comma-separated hosts reached without the proxy ('*' for all). Default: no_proxy.", valueName: "list"))
    var noproxy: String?

    @Flag(help: "Replace existing output files.")
    var overwrite = false

    @Flag(
        name: [.customShort("J"), .customLong("remote-header-name")],
        help: """
            Name each file from the server's Content-Disposition (filename*, then filename), sanitised to one name \
            in the output directory (else the URL's name); the first name a download gets is kept. --output must \
            then be a directory.
            """)
    var remoteHeaderName = false

    @Flag(
        name: [.customShort("N"), .customLong("revalidate")],
        help: """
            Ask the server whether a completed download changed (If-None-Match with its ETag, else \
            If-Modified-Since): 304 keeps the file ('not modified'), a new version replaces it once complete and \
            verified. Without it a completed download is not fetched again.
            """)
    var revalidate = false

    @Flag(
        help: """
            Flush downloads and records to disk (fsync) so that they also survive power loss; without it they \
            survive the process being killed at any instant.
            """)
    var durable = false

    @Flag(
        name: .customLong("no-digest"),
        help: """
            Compute no SHA-256 and do not ask the server for one: only the length is checked. Faster when the \
            CPU cannot hash as fast as the network delivers; cannot be combined with --sha256 or --checksums.
            """)
    var noDigest = false

    @Flag(
        name: .customLong("wait-lock"),
        help: """
            When another rangefetch uses the state directory, wait until it is done instead of failing (exit code \
            1).
            """)
    var waitLock = false

    @Flag(help: "Print one JSON event per line on stdout instead of progress.")
    var json = false

    @Argument(help: "The URLs to download.")
    var urls: [String] = []

    func validate() throws {
        guard !urls.isEmpty || inputFile != nil else { throw ValidationError("at least one URL is required") }
        if http1Only && http2 { throw ValidationError("--http1.1 and --http2 cannot be given together") }
        let list: InputList?
        do {
            list = try inputList()
        } catch {
            // One line without the usage text: FILE:LINE and the reason are the whole story.
            printError(error.message)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let all = allURLs(list)
        guard !all.isEmpty else { throw ValidationError("at least one URL is required; '\(inputFile ?? "")' has none") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        guard (1...16).contains(connections) else {
            throw ValidationError("--connections must be between 1 and 16, got \(connections)")
        }
        guard retries >= 0 else { throw ValidationError("--retries must not be negative") }
        do {
            try trust.check()
        } catch let error as DownloadError {
            // One line without the usage text: the file is the whole story.
            printError("--cacert: \(error.message)")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        for (name, value) in [("--connect-timeout", connectTimeout), ("--idle-timeout", idleTimeout)] {
            guard parseDuration(value) != nil else { throw ValidationError("\(name): invalid duration '\(value)'") }
        }
        if let deadline, parseDuration(deadline) == nil {
            throw ValidationError("--deadline: invalid duration '\(deadline)'")
        }
        if let sha256 {
            guard all.count == 1 else { throw ValidationError("--sha256 needs exactly one URL; use --checksums") }
            guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
                throw ValidationError("--sha256 must be 64 hex digits")
            }
        }
        let listed = list?.entries.contains { $0.sha256 != nil } == true
        if noDigest,
            let other = sha256 != nil
                ? "--sha256" : checksums != nil ? "--checksums" : listed ? "checksum= in \(inputFile ?? "")" : nil
        {
            // One line without the usage text: the two flags are the whole story.
            printError("--no-digest cannot be combined with \(other): checking a digest needs one computed")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        do {
            _ = try requestHeaders()
        } catch let error as DownloadError {
            // One line without the usage text: the message names the header.
            printError(error.message)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        do {
            _ = try proxySetting(environment: ProcessInfo.processInfo.environment)
        } catch let error as DownloadError {
            printError(error.message)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        if remoteHeaderName, let output, !output.hasSuffix("/"), !isDirectory(LexicalPath.absolute(output)) {
            // One line without the usage text: the two options are the whole story.
            printError(
                "-J names the file from the server: --output must be a directory (an existing one, or end it with "
                    + "'/'), not the file '\(output)'")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let listedChecksums: [String: String]
        if let checksums {
            guard let text = try? String(contentsOfFile: checksums, encoding: .utf8) else {
                throw ValidationError("--checksums: cannot read '\(checksums)'")
            }
            listedChecksums = parseChecksums(text)
        } else {
            listedChecksums = [:]
        }
        if let conflict = digestConflict(list, checksums: listedChecksums) {
            // One line naming the URL: a usage error, before anything is downloaded.
            printError(conflict)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
    }

    /// Parses the command line and runs, with every URL after the first set aside from the parser and appended
    /// to ``urls`` afterwards, then validated again with all of them.
    ///
    /// ArgumentParser's work per positional value grows with the number of values already parsed: 500 URLs cost
    /// it about 5% of the CPU time of downloading 500 small files.
    static func main() async {
        #if DEBUG
        // The tests run debug builds: an option added without its spelling in the list fails every one of them.
        precondition(
            declaredOptionsTakingValues == optionsTakingValues,
            "RangeFetch.optionsTakingValues is out of date: \(declaredOptionsTakingValues.sorted())")
        #endif
        var arguments = Array(CommandLine.arguments.dropFirst())
        let setAside = setAsideURLs(&arguments)
        do {
            let parsed = try parseAsRoot(arguments)
            guard var command = parsed as? RangeFetch else {
                var other = parsed
                return try other.run()
            }
            if !setAside.isEmpty {
                command.urls += setAside
                try command.validate()
            }
            try await command.run()
        } catch {
            exit(withError: error)
        }
    }

    /// Removes the URL arguments after the first from `arguments` and returns them in order; none when a value
    /// that is not a URL comes after one of them (the order of the positional values must stay the same).
    static func setAsideURLs(_ arguments: inout [String]) -> [String] {
        var kept: [String] = []
        var aside: [String] = []
        var keptURL = false
        var isValue = false
        var onlyPositional = false
        for argument in arguments {
            let positional = onlyPositional || (!isValue && !argument.hasPrefix("-"))
            isValue = !onlyPositional && optionsTakingValues.contains(argument)
            if argument == "--" { onlyPositional = true }
            let lower = argument.prefix(8).lowercased()
            if positional, lower.hasPrefix("http://") || lower.hasPrefix("https://") {
                if keptURL { aside.append(argument) } else { kept.append(argument) }
                keptURL = true
            } else if positional, !aside.isEmpty {
                return []
            } else {
                kept.append(argument)
            }
        }
        arguments = kept
        return aside
    }

    /// The spellings of the options that take a separate value, which ``setAsideURLs(_:)`` must step over.
    static let optionsTakingValues: Set<String> = [
        "-o", "--output", "--state", "-j", "--concurrency", "-x", "--connections", "--sha256", "--checksums", "-i",
        "--input-file",
        "--connect-timeout",
        "--idle-timeout", "--deadline", "--retries", "--cacert", "--limit-rate", "--speed-limit", "--speed-time",
        "--slow-retries",
        "-H", "--header", "--user-agent", "--proxy", "--noproxy",
    ]

    #if DEBUG
    /// The spellings of the declared options that take a value, from ArgumentParser's description of the command.
    static var declaredOptionsTakingValues: Set<String> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(_dumpHelp().utf8)),
            let command = (object as? [String: Any])?["command"] as? [String: Any],
            let arguments = command["arguments"] as? [[String: Any]]
        else { return [] }
        var spellings: Set<String> = []
        for argument in arguments where argument["kind"] as? String == "option" {
            for name in argument["names"] as? [[String: Any]] ?? [] {
                guard let kind = name["kind"] as? String, let text = name["name"] as? String else { continue }
                spellings.insert((kind == "short" ? "-" : "--") + text)
            }
        }
        return spellings
    }
    #endif

    /// The certificates `https://` accepts: the system's roots, the `--cacert` files, or any with `--insecure`.
    var trust: DownloadConfiguration.TLSTrust {
        .init(additionalCertificateFiles: cacert, acceptsAnyCertificate: insecure)
    }

    /// The `-H` headers, after the `--user-agent` one unless a `-H` sets `User-Agent`.
    ///
    /// - Throws: ``DownloadError/invalidHeader(_:)`` naming the first malformed or engine-owned header.
    func requestHeaders() throws -> HTTPFields {
        let given = HTTPFields(try header.map(DownloadRequest.header(parsing:)))
        guard let userAgent, given[.userAgent] == nil else { return given }
        return HTTPFields([try DownloadRequest.header(parsing: "User-Agent: " + userAgent)] + Array(given))
    }

    /// The proxy setting: `--proxy` (`''` for none) or the environment's proxies, and `--noproxy` or the
    /// environment's `no_proxy`.
    ///
    /// - Throws: ``DownloadError/invalidProxy(_:)`` naming the option or variable.
    func proxySetting(environment: [String: String]) throws -> DownloadConfiguration.Proxy {
        var setting: DownloadConfiguration.Proxy
        if let proxy {
            guard !proxy.isEmpty else { return .direct }
            do {
                setting = .init(try .init(parsing: proxy))
            } catch let error as DownloadError {
                throw DownloadError.invalidProxy("--proxy: \(error.message)")
            }
            let inherited = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
            setting.noProxy = DownloadConfiguration.Proxy.list(inherited)
        } else {
            setting = try .fromEnvironment(environment)
        }
        if let noproxy { setting.noProxy = DownloadConfiguration.Proxy.list(noproxy) }
        return setting
    }

    func run() async throws {
        var configuration = DownloadConfiguration()
        configuration.concurrency = concurrency
        configuration.connectionsPerFile = connections
        configuration.timeouts = .init(
            connect: parseDuration(connectTimeout)!, idle: parseDuration(idleTimeout)!,
            overall: deadline.flatMap(parseDuration))
        configuration.retry.maximumRetries = retries
        configuration.maximumBytesPerSecond = rates.limitRate.flatMap(parseRate)
        configuration.lowSpeed = try rates.lowSpeedLimit()
        if durable { configuration.durability = .powerLoss }
        if noDigest { configuration.verification = .lengthOnly }
        configuration.tls = trust
        configuration.httpVersion = http1Only ? .http1Only : .automatic
        configuration.proxy = try proxySetting(environment: ProcessInfo.processInfo.environment)
        let code = await FetchRun(command: self, configuration: configuration).run()
        if code != .success { throw ExitCode(code.rawValue) }
    }
}

/// Parses `10s`, `500ms`, `2m`, `1h` or a bare number of seconds.
func parseDuration(_ text: String) -> Duration? {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
    var number = Substring(text)
    var scale = 1.0
    for (suffix, factor) in units where text.hasSuffix(suffix) {
        number = text.dropLast(suffix.count)
        scale = factor
        break
    }
    guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
    return .milliseconds(Int64((value * scale * 1000).rounded()))
}

/// Reads a `sha256sum` file: `HEX  name` or `HEX *name` per line.
func parseChecksums(_ text: String) -> [String: String] {
    var map: [String: String] = [:]
    for line in text.split(whereSeparator: \.isNewline) {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].count == 64, parts[0].allSatisfy(\.isHexDigit) else { continue }
        var name = parts[1].trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("*") { name.removeFirst() }
        map[name] = String(parts[0]).lowercased()
        map[(name as NSString).lastPathComponent] = map[name] ?? String(parts[0]).lowercased()
    }
    return map
}
