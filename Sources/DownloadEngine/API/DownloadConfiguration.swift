import Foundation
import HTTPTypes
import Logging

/// Engine-wide settings, a value type with defaults for everything.
///
/// Modelled on `HTTPClient.Configuration`: nested types group timeouts, the retry policy and the redirect policy.
///
/// ```swift
/// var configuration = DownloadConfiguration()
/// configuration.concurrency = 2
/// configuration.timeouts.idle = .seconds(5)
/// configuration.retry = .exponential(maximumRetries: 3)
/// ```
public struct DownloadConfiguration: Sendable {
    /// The maximum number of transfers running at once across the engine. Default 4.
    public var concurrency: Int

    /// Connections per file: above 1, a file whose first response proves range support with a strong `ETag` (and
    /// whose length is at least two ``minimumSegmentSize``) is split into segments fetched in parallel, each with
    /// `Range` and the same `If-Range`. At most ``concurrency`` × ``connectionsPerFile`` connections are open.
    /// Default 1.
    public var connectionsPerFile: Int

    /// The smallest segment a split produces: a connection that finishes its segment takes half of the largest one
    /// still running only when each half keeps at least this many bytes. Default 1 MiB.
    public var minimumSegmentSize: Int64

    /// Connect, idle and overall time limits.
    public var timeouts: Timeouts

    /// When and how long to wait before retrying.
    public var retry: RetryPolicy

    /// How redirects are followed by the engine.
    public var redirects: RedirectPolicy

    /// How a completed body is checked before it is moved into place. Default ``Verification/sha256``: the
    /// SHA-256 is computed while writing and compared with the expected digest and the server's `Repr-Digest`.
    public var verification: Verification

    /// Minimum interval between two progress events for one task. Default 200 ms.
    public var progressInterval: Duration

    /// The largest body chunk written to the partial file in one call, in bytes; bounds the bytes refetched after
    /// a crash. Default 64 KiB, at most 1 MiB.
    public var writeBufferSize: Int

    /// What the state directory and completed files must survive, and so which `fsync` calls are made. Default
    /// ``Durability/processCrash``: no `fsync` at all, like `curl` and `aria2c`.
    public var durability: Durability

    /// Extra request headers sent on every request (for example `Authorization`); dropped on cross-origin hops
    /// when listed in ``RedirectPolicy/sensitiveHeaders``. A request's own ``DownloadRequest/headers`` replace
    /// these by name. Not stored in task records.
    public var headers: HTTPFields {
        get { HTTPFields(pairs: headerList) }
        set { headerList = newValue.pairs }
    }

    /// ``headers`` as the engine sends them: (name, value) pairs in order, names as given.
    var headerList: [(name: String, value: String)]

    /// Which server certificates `https://` accepts: the system's trust roots, plus any CA given here. Default
    /// ``TLSTrust/system``.
    public var tls: TLSTrust

    /// What ``DownloadEngine/download(_:)`` does with its download when the Swift task awaiting it is cancelled.
    /// Default ``TaskCancellation/pause``.
    public var onTaskCancellation: TaskCancellation

    /// The HTTP proxy requests go through, chosen per URL. Default ``Proxy/direct``: none, whatever the
    /// environment says; ``Proxy/fromEnvironment(_:)`` reads `http_proxy`, `https_proxy`, `all_proxy` and
    /// `no_proxy` as curl does.
    public var proxy: Proxy

    /// The most bytes per second the whole engine reads, all downloads and segments together (curl's
    /// `--limit-rate`, aria2c's `--max-download-limit`); `nil` for no limit, the default. A download's own
    /// ``DownloadRequest/maximumBytesPerSecond`` applies as well: its bodies wait for whichever limit is lower.
    ///
    /// Enforced where bytes are read, by delaying the next read of a connection (TCP back-pressure), through a token
    /// bucket whose burst is a tenth of a second of traffic: over any window the bytes read stay within the rate,
    /// plus that burst and one read per connection (64 KiB; through an HTTP proxy, the parts of one socket read,
    /// up to 256 KiB). Without a limit the reading path is unchanged.
    public var maximumBytesPerSecond: Int64?

    /// The low-speed abort: an attempt slower than this over its window is aborted and resumed where it stood,
    /// a bounded number of times (see ``LowSpeedLimit``). Default `nil`: no attempt is too slow, only the idle
    /// timeout ends one that brings nothing.
    public var lowSpeed: LowSpeedLimit?

    /// Where the engine logs what it does: each request sent (URL, range), each response status, each retry and
    /// its reason, each resume decision (at `debug`, retries at `info`). Default: a logger that drops everything.
    public var logger: Logger

    /// Which HTTP versions the engine speaks. Default ``HTTPVersion/automatic``: over TLS it offers `h2` and
    /// `http/1.1` by ALPN and takes what the server chooses, as curl does; `http://` is HTTP/1.1 (AsyncHTTPClient
    /// has no cleartext HTTP/2). Requests through a proxy are HTTP/1.1 either way, tunnels included.
    public var httpVersion: HTTPVersion = .automatic

    /// Creates a configuration with the defaults.
    public init(
        concurrency: Int = 4,
        connectionsPerFile: Int = 1,
        minimumSegmentSize: Int64 = 1 << 20,
        timeouts: Timeouts = .init(),
        retry: RetryPolicy = .init(),
        redirects: RedirectPolicy = .init(),
        verification: Verification = .sha256,
        progressInterval: Duration = .milliseconds(200),
        writeBufferSize: Int = 64 * 1024,
        durability: Durability = .processCrash,
        headers: HTTPFields = [:],
        tls: TLSTrust = .system,
        onTaskCancellation: TaskCancellation = .pause,
        proxy: Proxy = .direct,
        maximumBytesPerSecond: Int64? = nil,
        lowSpeed: LowSpeedLimit? = nil,
        logger: Logger = Logger(label: "DownloadEngine", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.concurrency = concurrency
        self.connectionsPerFile = connectionsPerFile
        self.minimumSegmentSize = minimumSegmentSize
        self.timeouts = timeouts
        self.retry = retry
        self.redirects = redirects
        self.verification = verification
        self.progressInterval = progressInterval
        self.writeBufferSize = writeBufferSize
        self.durability = durability
        self.headerList = headers.pairs
        self.tls = tls
        self.onTaskCancellation = onTaskCancellation
        self.proxy = proxy
        self.maximumBytesPerSecond = maximumBytesPerSecond
        self.lowSpeed = lowSpeed
        self.logger = logger
    }

    /// Creates a configuration with its headers as (name, value) pairs.
    ///
    /// Deprecated for one release: give ``headers`` as `HTTPFields` (docs/engine.md, "Breaking changes"). The
    /// pairs are kept as given, so a name that is not a token is still refused by ``DownloadEngine/add(_:start:)``.
    @available(*, deprecated, message: "pass headers as HTTPFields")
    public init(
        concurrency: Int = 4,
        connectionsPerFile: Int = 1,
        minimumSegmentSize: Int64 = 1 << 20,
        timeouts: Timeouts = .init(),
        retry: RetryPolicy = .init(),
        redirects: RedirectPolicy = .init(),
        verification: Verification = .sha256,
        progressInterval: Duration = .milliseconds(200),
        writeBufferSize: Int = 64 * 1024,
        durability: Durability = .processCrash,
        headers: [(name: String, value: String)],
        tls: TLSTrust = .system,
        onTaskCancellation: TaskCancellation = .pause,
        proxy: Proxy = .direct,
        maximumBytesPerSecond: Int64? = nil,
        lowSpeed: LowSpeedLimit? = nil,
        logger: Logger = Logger(label: "DownloadEngine", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.init(
            concurrency: concurrency, connectionsPerFile: connectionsPerFile, minimumSegmentSize: minimumSegmentSize,
            timeouts: timeouts, retry: retry, redirects: redirects, verification: verification,
            progressInterval: progressInterval, writeBufferSize: writeBufferSize, durability: durability, tls: tls,
            onTaskCancellation: onTaskCancellation, proxy: proxy, maximumBytesPerSecond: maximumBytesPerSecond,
            lowSpeed: lowSpeed, logger: logger)
        headerList = headers
    }

    /// The transport's settings: connect timeout, one idle connection per connection that may run at once.
    var transport: TransportConfiguration {
        TransportConfiguration(
            connectTimeout: timeouts.connect, connectionsPerHost: max(1, concurrency) * max(1, connectionsPerFile),
            trust: tls, proxy: proxy, logger: logger, httpVersion: httpVersion)
    }

    /// The HTTP versions the engine may speak (``DownloadConfiguration/httpVersion``).
    public enum HTTPVersion: Sendable, Hashable {
        /// HTTP/2 or HTTP/1.1 over TLS, as ALPN decides (curl's default and its `--http2`); HTTP/1.1 in clear.
        case automatic
        /// HTTP/1.1 only: ALPN offers `http/1.1` alone (curl's `--http1.1`).
        case http1Only
    }
}

extension DownloadConfiguration {
    /// What happens to a download whose awaiting Swift task is cancelled (see ``DownloadEngine/download(_:)``).
    public struct TaskCancellation: Sendable, Hashable {
        private enum Action: Hashable {
            case pause
            case cancel
        }

        private let action: Action

        /// Pause it: the partial file and the record stay, and the next ``DownloadEngine/download(_:)`` or
        /// ``DownloadEngine/add(_:start:)`` of the same URL and destination resumes it. The default, so that
        /// leaving a screen never throws away what was downloaded; a caller who wants it gone says so.
        public static let pause = TaskCancellation(action: .pause)

        /// Cancel it and remove it from the engine: the partial file and the record are deleted, as with
        /// ``DownloadEngine/remove(_:)``.
        public static let cancel = TaskCancellation(action: .cancel)

        /// Whether the download is removed rather than paused.
        var removes: Bool { action == .cancel }
    }
}

extension DownloadConfiguration {
    /// Which server certificates are accepted over `https://`. Host names are always verified, unless
    /// ``acceptsAnyCertificate`` is set.
    public struct TLSTrust: Sendable, Hashable {
        /// CA certificates (PEM text, one or more each) trusted beside the system's roots: a test server's
        /// throwaway CA, a company CA.
        public var additionalCertificatesPEM: [String]
        /// Files of PEM CA certificates trusted beside the system's roots (`rangefetch --cacert`).
        public var additionalCertificateFiles: [String]
        /// Accept any certificate for any name: no verification at all. Never the default; for test servers only
        /// (`rangefetch --insecure`).
        public var acceptsAnyCertificate: Bool

        /// Makes a trust setting.
        public init(
            additionalCertificatesPEM: [String] = [], additionalCertificateFiles: [String] = [],
            acceptsAnyCertificate: Bool = false
        ) {
            self.additionalCertificatesPEM = additionalCertificatesPEM
            self.additionalCertificateFiles = additionalCertificateFiles
            self.acceptsAnyCertificate = acceptsAnyCertificate
        }

        /// The system's trust roots only.
        public static let system = TLSTrust()

        /// No verification at all (see ``acceptsAnyCertificate``).
        public static let insecure = TLSTrust(acceptsAnyCertificate: true)
    }
}

extension DownloadConfiguration {
    /// What a download's files must survive.
    ///
    /// Both levels keep every promise of the engine when the process dies at any instant (`kill -9`, a crash, the
    /// OOM killer): body bytes and records are written with `pwrite` and replaced with `rename`, and the kernel's
    /// page cache keeps them after the process is gone. They differ when the machine itself stops (power loss, a
    /// kernel crash), which the page cache does not survive.
    public struct Durability: Sendable, Hashable {
        private enum Level: Hashable {
            case processCrash
            case powerLoss
        }

        private let level: Level

        /// Survive the process dying at any instant; no `fsync`. After a power loss, a completed file may have
        /// lost its tail or hold zeros, a record may be empty (it is then set aside as corrupt) and a partial file
        /// may be shorter than its record says (the resume uses the actual length, the final digest catches the
        /// rest of a partial file's damage). The default: it costs nothing, and it is what `curl` and `aria2c` do.
        public static let processCrash = Durability(level: .processCrash)

        /// Also survive power loss and kernel crashes: the partial file is `fsync`ed before the completed record
        /// and the rename, and every record save is a write, `fsync`, rename and `fsync` of the directory. A file
        /// at its destination is then complete and verified on disk, not only in the page cache. Costs a disk
        /// flush of the whole file per download plus two per record save.
        public static let powerLoss = Durability(level: .powerLoss)

        /// Whether files and directories are flushed with `fsync`.
        var syncsToDisk: Bool { level == .powerLoss }
    }

    /// How a download is checked before it is moved into place.
    ///
    /// The length is always checked against the announced total. A SHA-256 costs about as much CPU per byte as
    /// receiving and writing together (a single stream cannot be hashed in parallel), so a client that does not
    /// need it can turn it off.
    public struct Verification: Sendable, Hashable {
        private enum Level: Hashable {
            case lengthOnly
            case sha256
        }

        private let level: Level

        /// The SHA-256 of the whole representation, computed incrementally while writing (the kept prefix
        /// re-read on resume), compared with ``DownloadRequest/sha256`` when given and with the server's
        /// `Repr-Digest: sha-256`, which every request asks for with `Want-Repr-Digest: sha-256=1`. The default.
        public static let sha256 = Verification(level: .sha256)

        /// Only the length: no hashing, no `Want-Repr-Digest`, and a `Repr-Digest` the server sends is ignored.
        /// A request with an expected ``DownloadRequest/sha256`` is refused. Completed results carry no digest.
        public static let lengthOnly = Verification(level: .lengthOnly)

        /// Whether the SHA-256 is computed and checked.
        var computesSHA256: Bool { level == .sha256 }
    }

    /// Time limits for one transfer.
    public struct Timeouts: Sendable, Hashable {
        /// The time allowed to establish a TCP connection. Default 10 s.
        public var connect: Duration

        /// The longest wait for the response head or the next body bytes before the attempt is aborted and retried
        /// from the current offset. Default 30 s.
        public var idle: Duration

        /// An optional limit on a task's total time across all attempts of one run; `nil` (default) means none.
        public var overall: Duration?

        /// Creates timeouts.
        ///
        /// - Parameters:
        ///   - connect: The connect timeout.
        ///   - idle: The idle (no body bytes) timeout.
        ///   - overall: The overall deadline, or `nil`.
        public init(connect: Duration = .seconds(10), idle: Duration = .seconds(30), overall: Duration? = nil) {
            self.connect = connect
            self.idle = idle
            self.overall = overall
        }
    }

    /// Which responses and errors are retried, and how long to wait.
    ///
    /// Delays grow exponentially (`initialDelay * multiplier^(n-1)`), capped at ``maximumDelay``, with
    /// "equal jitter" (a random half of the delay). A `Retry-After` header replaces the computed delay, capped at
    /// ``maximumRetryAfter``. The failure counter starts again whenever an attempt stores new bytes.
    public struct RetryPolicy: Sendable, Hashable {
        /// Retries allowed in a row without progress; `0` disables retries. Default 10.
        public var maximumRetries: Int
        /// The delay before the first retry. Default 0.5 s.
        public var initialDelay: Duration
        /// The cap on a computed delay. Default 30 s.
        public var maximumDelay: Duration
        /// The growth factor between consecutive delays. Default 2.
        public var multiplier: Double
        /// Whether to randomise delays (equal jitter). Default `true`.
        public var jitter: Bool
        /// The cap on an honoured `Retry-After`. Default 10 minutes.
        public var maximumRetryAfter: Duration

        /// Creates a retry policy.
        public init(
            maximumRetries: Int = 10,
            initialDelay: Duration = .milliseconds(500),
            maximumDelay: Duration = .seconds(30),
            multiplier: Double = 2,
            jitter: Bool = true,
            maximumRetryAfter: Duration = .seconds(600)
        ) {
            self.maximumRetries = maximumRetries
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.multiplier = multiplier
            self.jitter = jitter
            self.maximumRetryAfter = maximumRetryAfter
        }

        /// Exponential backoff with jitter and the given budget.
        ///
        /// - Parameters:
        ///   - maximumRetries: Retries allowed in a row without progress.
        ///   - initialDelay: The first delay.
        ///   - maximumDelay: The cap on computed delays.
        /// - Returns: The policy.
        public static func exponential(
            maximumRetries: Int,
            initialDelay: Duration = .milliseconds(500),
            maximumDelay: Duration = .seconds(30)
        ) -> RetryPolicy {
            .init(maximumRetries: maximumRetries, initialDelay: initialDelay, maximumDelay: maximumDelay)
        }

        /// Never retry.
        public static let never = RetryPolicy(maximumRetries: 0)

        /// The HTTP statuses retried from the current offset: 408, 429, 500, 502, 503 and 504.
        public static let retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

        /// Whether a response status is retried.
        ///
        /// - Parameter status: The HTTP status code.
        /// - Returns: `true` for 408, 429, 500, 502, 503 and 504.
        public static func isRetryable(status: Int) -> Bool { retryableStatuses.contains(status) }

        /// The delay before retry number `retry`, or `nil` when the budget is spent. Pure: the randomness comes in.
        ///
        /// - Parameters:
        ///   - retry: The retry about to happen, counting from 1 (consecutive failures without progress).
        ///   - retryAfter: The server's `Retry-After`, already converted to a duration, if any.
        ///   - random: A number in `0..<1` used for jitter.
        /// - Returns: How long to wait, or `nil` when no retries are left.
        public func delay(forRetry retry: Int, retryAfter: Duration? = nil, random: Double) -> Duration? {
            guard retry >= 1, retry <= maximumRetries else { return nil }
            if let retryAfter {
                return min(max(retryAfter, .zero), maximumRetryAfter)
            }
            let base = initialDelay.seconds * pow(multiplier, Double(retry - 1))
            let capped = min(base.isFinite ? base : maximumDelay.seconds, maximumDelay.seconds)
            let seconds = jitter ? capped / 2 + capped / 2 * min(max(random, 0), 1) : capped
            return .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
    }

    /// How the engine follows redirects (the transport never follows them itself).
    public struct RedirectPolicy: Sendable, Hashable {
        /// The maximum number of hops before ``DownloadError/tooManyRedirects(_:url:)``. Default 20.
        public var maximumHops: Int
        /// Request headers removed from the first hop that changes origin (scheme, host or port) onwards, https→http
        /// included. Default `Authorization`, `Cookie` and `Proxy-Authorization`.
        public var sensitiveHeaders: Set<String>

        /// Creates a redirect policy.
        public init(
            maximumHops: Int = 20, sensitiveHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]
        ) {
            self.maximumHops = maximumHops
            self.sensitiveHeaders = Set(sensitiveHeaders.map { $0.lowercased() })
        }

        /// Follow at most `max` hops.
        ///
        /// - Parameter max: The hop limit.
        /// - Returns: The policy.
        public static func follow(max: Int) -> RedirectPolicy { .init(maximumHops: max) }

        /// Do not follow redirects: any 3xx is a permanent failure.
        public static let disallow = RedirectPolicy(maximumHops: 0)
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
