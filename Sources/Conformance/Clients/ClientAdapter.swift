import Foundation

/// What a client can be asked to do beyond a plain download; a scenario needing more is `n/a` for it.
public struct ClientCapabilities: OptionSet, Hashable, Sendable {
    /// The raw bits.
    public let rawValue: Int

    /// Makes a set from raw bits.
    ///
    /// - Parameters:
    ///   - rawValue: the bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// It can be killed with SIGKILL and started again on the same output and state (a subprocess).
    public static let killAndRestart = ClientCapabilities(rawValue: 1 << 0)
    /// It can pause a download and resume it later.
    public static let pauseAndResume = ClientCapabilities(rawValue: 1 << 1)
    /// It can cancel a download, removing what it wrote.
    public static let cancel = ClientCapabilities(rawValue: 1 << 2)
    /// It continues from an existing output file it did not write itself.
    public static let prefilledOutput = ClientCapabilities(rawValue: 1 << 3)
    /// It downloads several URLs in one run, with a concurrency limit.
    public static let multipleFiles = ClientCapabilities(rawValue: 1 << 4)
    /// It fetches one file over several connections at once, each asking for its own segment, so a Range
    /// that starts past the bytes received so far is a new segment, not a skipped gap.
    public static let segmented = ClientCapabilities(rawValue: 1 << 5)
    /// It sends an `Authorization` header it is given, as its users configure a token (``ClientJob/authorization``).
    public static let authorization = ClientCapabilities(rawValue: 1 << 6)
    /// It saves a download in a directory it is given, under the name the server gives in `Content-Disposition`
    /// (curl `-OJ`, wget `--content-disposition`), as its users let it name files (``ClientJob/namesFromServer``).
    public static let serverNamedOutput = ClientCapabilities(rawValue: 1 << 7)
}

/// One download (or set of downloads) a client is asked to perform.
public struct ClientJob: Hashable, Sendable {
    /// One URL and where its bytes must end up.
    public struct Transfer: Hashable, Sendable {
        /// The absolute URL.
        public var url: String
        /// The absolute path of the output file; when the job ``ClientJob/namesFromServer``, only its directory is
        /// given to the client.
        public var output: String

        /// The output's directory: where a client that names its output from the server saves it.
        public var directory: String { (output as NSString).deletingLastPathComponent }

        /// Makes a transfer.
        ///
        /// - Parameters:
        ///   - url: the URL.
        ///   - output: the output path.
        public init(url: String, output: String) {
            self.url = url
            self.output = output
        }
    }

    /// The transfers, in order; one unless the scenario lists several `files`.
    public var transfers: [Transfer]
    /// A directory the client may keep state in (partial files, records); it survives restarts.
    public var stateDirectory: String
    /// A directory for the client's logs (stdout and stderr of subprocesses); not counted as output.
    public var logDirectory: String
    /// The most downloads at once.
    public var concurrency: Int
    /// How long a transfer may receive nothing before the client should give up on that attempt.
    public var idleTimeout: Duration
    /// The most runs of a subprocess client per start (the first, and each restart a `kill-at` or `pause-at` step
    /// makes), that start included: after an exit its definition declares transient the harness runs it again, one
    /// second later, until this many runs; any other exit is final (`--attempts`).
    public var attempts: Int
    /// The connect timeout to configure, where the client takes one.
    public var connectTimeout: Duration = .seconds(5)
    /// The retries to configure, where the client takes a number; nil leaves each client's own setting.
    public var retries: Int?
    /// The PEM file of the CA the server's TLS certificates chain to, which the client must trust; nil when the
    /// server serves no TLS. Given whenever the server has TLS (a `--tls` run, or a row redirecting to `https:` or
    /// a TLS fault), so a certificate row fails for the fault it is about, not for an unknown CA.
    public var certificateAuthorityFile: String?
    /// The `Authorization` value the client is configured to send, as its users configure a token; nil for none. A
    /// row whose redirect leaves the origin sets it, to see whether the client forwards it there.
    public var authorization: String?
    /// Whether the client is given only the output's directory and names the file from the server's
    /// `Content-Disposition` (a row's `output-names`); subprocess clients then run in that directory.
    public var namesFromServer = false
    /// The wire the URLs lead to: over h2c a client must be told to speak HTTP/2 with prior knowledge (a
    /// definition's `protocols`), over h2 it should offer `h2` by ALPN.
    public var scheme = MatrixScheme.http

    /// Makes a job.
    ///
    /// - Parameters:
    ///   - transfers: the URLs and outputs.
    ///   - stateDirectory: the client's state directory.
    ///   - logDirectory: where logs go.
    ///   - concurrency: the most downloads at once.
    ///   - idleTimeout: the idle timeout to configure.
    ///   - attempts: the most runs per start after transient exits.
    public init(
        transfers: [Transfer], stateDirectory: String, logDirectory: String, concurrency: Int = 1,
        idleTimeout: Duration = .seconds(5), attempts: Int = 5
    ) {
        self.transfers = transfers
        self.stateDirectory = stateDirectory
        self.logDirectory = logDirectory
        self.concurrency = concurrency
        self.idleTimeout = idleTimeout
        self.attempts = attempts
    }

    /// Applies what a row's `expect` section says about how clients are configured: its connect timeout, retries,
    /// Authorization, and whether the client names its output.
    ///
    /// - Parameters:
    ///   - expectation: the row's expectation.
    public mutating func configure(for expectation: ScenarioExpectation) {
        connectTimeout = expectation.connectTimeout ?? connectTimeout
        retries = expectation.retries
        authorization = expectation.authorization
        namesFromServer = expectation.outputNames != nil
    }

    /// The directory a subprocess client runs in: the output's when it names the output itself (a client that writes
    /// the name it was given relative to where it runs, as wget2 does with `--content-disposition`, then writes it
    /// beside the others), else the state directory.
    public var workingDirectory: String {
        namesFromServer ? transfers.first?.directory ?? stateDirectory : stateDirectory
    }
}

/// How a client run ended, as the client reported it.
public enum ClientExit: Hashable, Sendable {
    /// The client reported success.
    case success
    /// The client reported failure; the detail is one line (an exit status, the last line of stderr, an error).
    case failure(String)
    /// The client reported the download as cancelled.
    case cancelled

    /// A short form for reports.
    public var summary: String {
        switch self {
        case .success: "success"
        case .failure(let detail): "failure (\(detail))"
        case .cancelled: "cancelled"
        }
    }
}

/// A downloader under test, behind one small interface, so a new client is one small file.
///
/// Call order: `unavailableReason()` once; if nil, `start(_:)` once per (scenario, client) pair. The
/// returned run is then polled until it reports an exit, with at most the steps the adapter's
/// `capabilities` allow, in the order the scenario lists them.
public protocol ClientAdapter: Sendable {
    /// The column name in reports (`engine`, `curl`, …).
    var name: String { get }
    /// The steps and job shapes this client supports.
    var capabilities: ClientCapabilities { get }
    /// One line on how this client is invoked, for reports and `--list`.
    var invocation: String { get }
    /// Why the client cannot be given the server's CA file (so every row over TLS is n/a for it), or nil when it
    /// can. A client that cannot trust the CA would fail every https row for that reason alone.
    var tlsLimitation: String? { get }
    /// Why the client cannot be asked for the protocol of `scheme` (cleartext HTTP/2 needs prior knowledge, which
    /// a client must be told to use), or nil when it can. A client that can offer h2 over TLS but does not is found
    /// out from the journal instead (`Judge.http2Problem`).
    func protocolLimitation(_ scheme: MatrixScheme) -> String?
    /// Why the client cannot run here (program not installed, engine not built), or nil when it can.
    func unavailableReason() async -> String?
    /// Starts a job.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the running download.
    /// - Throws: `ConformanceError.clientFailed` when it cannot be started at all.
    func start(_ job: ClientJob) async throws -> any ClientRun
    /// The command a tester runs by hand to do `job` as this client does: the program ``start(_:)`` runs, or for
    /// a client in process a command doing the same; nil when there is none (the reproducer then names the client's
    /// invocation instead).
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the command, or nil.
    func command(for job: ClientJob) -> ClientCommand?
}

extension ClientAdapter {
    /// None by default: the client takes the CA file.
    public var tlsLimitation: String? { nil }

    /// By default a client speaks HTTP/1.1, and over TLS may offer h2 by ALPN; it has no way to be asked for h2c.
    public func protocolLimitation(_ scheme: MatrixScheme) -> String? {
        scheme == .h2c ? "\(name) cannot be asked for cleartext HTTP/2 (prior knowledge)" : nil
    }

    /// None by default: a client in process has no command line.
    public func command(for job: ClientJob) -> ClientCommand? { nil }
}

/// A running client download, driven by the runner.
///
/// `poll()` is called repeatedly (every few milliseconds); the step methods are only called for steps in
/// the adapter's `capabilities`, and never after `poll()` returned an exit.
public protocol ClientRun: Sendable {
    /// The exit once the client has finished (including its own retry loop), nil while it runs.
    func poll() async -> ClientExit?
    /// Kills the client with SIGKILL and starts it again on the same output and state.
    func killAndRestart() async throws
    /// Pauses the download.
    func pause() async throws
    /// Resumes a paused download.
    func resume() async throws
    /// Cancels the download.
    func cancel() async throws
    /// Stops everything at once (the run timed out, or the harness is stopping); must not throw or wait long, and
    /// leaves no process of the client running.
    func terminate() async
    /// Every start of the client's program so far, in order, with its reason; empty for a client run in process.
    var launches: [ClientLaunch] { get }
}

extension ClientRun {
    /// None: a client run in process has no program to start.
    public var launches: [ClientLaunch] { [] }
    /// Unsupported by default.
    public func killAndRestart() async throws {
        throw ConformanceError.clientFailed("kill and restart is not supported")
    }
    /// Unsupported by default.
    public func pause() async throws { throw ConformanceError.clientFailed("pause is not supported") }
    /// Unsupported by default.
    public func resume() async throws { throw ConformanceError.clientFailed("resume is not supported") }
    /// Unsupported by default.
    public func cancel() async throws { throw ConformanceError.clientFailed("cancel is not supported") }
}
