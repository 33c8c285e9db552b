import Foundation
import HTTPTypes

/// A task's stable identifier: chosen when the task is added, kept in its record, unrelated to the URL.
public struct DownloadTaskID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The identifier's text (a lower-case UUID), also the stem of the task's files in the state directory.
    public let rawValue: String

    /// Wraps an identifier's text.
    ///
    /// - Parameter rawValue: The text.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A random (version 4) UUID in lower case.
    ///
    /// Built from the system generator (`getrandom`) rather than Foundation's `UUID()`, which on Linux opens, reads
    /// and closes `/dev/urandom` for every identifier: three system calls per task added.
    static func random() -> DownloadTaskID {
        var generator = SystemRandomNumberGenerator()
        var bytes = withUnsafeBytes(of: (generator.next() as UInt64, generator.next() as UInt64)) { Array($0) }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return .init(String(decoding: text, as: UTF8.self))
    }

    /// Decodes an identifier stored as a plain string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the identifier as a plain string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The identifier's text.
    public var description: String { rawValue }

    /// Orders identifiers by their text.
    public static func < (lhs: DownloadTaskID, rhs: DownloadTaskID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The lifecycle of a task.
///
/// `idle` → `waiting` (queued) → `running` ⇄ `retrying` → `completed` | `failed` | `cancelled`;
/// `paused` can be entered from `idle`, `waiting`, `running` and `retrying`, and left with `resume`.
public enum DownloadState: String, Sendable, Codable, CaseIterable {
    /// Added but not started.
    case idle
    /// Queued for a free transfer slot.
    case waiting
    /// Transferring.
    case running
    /// Waiting out a backoff delay before the next attempt.
    case retrying
    /// Stopped by `pause` (or by shutdown); the partial file is kept.
    case paused
    /// Verified and moved to the destination. Terminal.
    case completed
    /// Given up with an error. Terminal until added or resumed again.
    case failed
    /// Cancelled; the partial file was deleted. Terminal.
    case cancelled

    /// Whether the task has ended (completed, failed or cancelled).
    public var isTerminal: Bool { self == .completed || self == .failed || self == .cancelled }

    /// Whether the task holds or waits for a transfer slot.
    public var isActive: Bool { self == .waiting || self == .running || self == .retrying }
}

/// What to download and where to put it.
public struct DownloadRequest: Sendable, Hashable {
    /// The original URL; the task's identity in the state directory (with ``destination``).
    public var url: String
    /// The destination file path (absolute or relative to the current directory); with ``namesFromResponse``, the
    /// directory the file is saved in.
    public var destination: String
    /// Whether the file's name comes from the server: ``destination`` is then a directory, and the file in it is
    /// named from the `Content-Disposition` of the first response whose bytes are written (`filename*` first, then
    /// `filename`), else from the last segment of the URL's path, sanitised to one name (see ``OutputName``). The
    /// first name chosen is kept in the task's record: a later response, or a later run, that names the file
    /// otherwise does not rename it. The task is identified by its URL and the directory. Default `false`.
    public var namesFromResponse: Bool
    /// Whether a task already completed, whose destination is still there, asks the server whether its file
    /// changed (wget `-N`, curl `--etag-compare`): `If-None-Match` with the recorded `ETag`, else
    /// `If-Modified-Since` with the recorded `Last-Modified` (without either, it is fetched again). A 304 keeps the
    /// file (the task completes with ``DownloadTaskSnapshot/notModified`` set); a new representation is
    /// downloaded into the partial file and replaces the destination only once complete and verified, so the old
    /// file stays intact until then. Without it (the default) a completed task is not fetched again. A task that
    /// is not completed resumes as usual.
    public var revalidates: Bool
    /// The expected SHA-256 in hex, verified before the file is moved into place (needs
    /// ``DownloadConfiguration/Verification/sha256``).
    public var sha256: String?
    /// Whether an existing destination file may be replaced. Default `false`.
    public var overwrite: Bool
    /// Request headers of this download, sent with every request after ``DownloadConfiguration/headers``; a field
    /// of the same name (case-insensitively) replaces the configuration's. Those the engine sets itself (`Range`,
    /// `If-Range`, `Accept-Encoding`, `Host`, ...) are refused by ``DownloadEngine/add(_:start:)``. Stored in the
    /// task's record so a resume after a restart sends them again; `Authorization`, `Cookie` and
    /// `Proxy-Authorization` only with ``storesCredentials``.
    public var headers: HTTPFields {
        get { HTTPFields(pairs: headerList) }
        set { headerList = newValue.pairs }
    }
    /// ``headers`` as the engine sends and records them: (name, value) pairs in order, names as given.
    var headerList: [(name: String, value: String)] {
        get { headerFields.map { ($0.name, $0.value) } }
        set { headerFields = newValue.map { HeaderField(name: $0.name, value: $0.value) } }
    }
    /// Whether `Authorization`, `Cookie` and `Proxy-Authorization` among ``headers`` are written to the task's
    /// record in the state directory (in clear text). Default `false`: a resume after a restart then needs them
    /// given again, and ``DownloadEngine/add(_:start:)`` says so with ``DownloadError/credentialsRequired(_:)``.
    public var storesCredentials: Bool
    /// The most bytes per second this download reads, all its segments together; `nil` for no limit of its own
    /// (the default). The engine's ``DownloadConfiguration/maximumBytesPerSecond`` applies as well. Not stored in
    /// the task's record: a resume after a restart runs under the limit given then.
    public var maximumBytesPerSecond: Int64?

    /// Stored as plain values so that the request stays `Hashable`, which tuples are not.
    private var headerFields: [HeaderField]

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - url: The URL to download (`http` or `https`).
    ///   - destination: The file to create.
    ///   - sha256: The expected SHA-256 in hex, if known.
    ///   - overwrite: Whether an existing destination may be replaced.
    ///   - headers: Request headers of this download.
    ///   - storesCredentials: Whether credential headers are written to the state directory.
    ///   - namesFromResponse: Whether `destination` is a directory and the server names the file in it.
    ///   - revalidates: Whether a completed task asks the server whether its file changed.
    ///   - maximumBytesPerSecond: This download's bandwidth limit, if any.
    public init(
        url: String, destination: String, sha256: String? = nil, overwrite: Bool = false,
        headers: HTTPFields = [:], storesCredentials: Bool = false,
        namesFromResponse: Bool = false, revalidates: Bool = false, maximumBytesPerSecond: Int64? = nil
    ) {
        self.url = url
        self.destination = destination
        self.namesFromResponse = namesFromResponse
        self.revalidates = revalidates
        self.sha256 = sha256
        self.overwrite = overwrite
        self.headerFields = headers.map { HeaderField(name: $0.name.rawName, value: $0.value) }
        self.storesCredentials = storesCredentials
        self.maximumBytesPerSecond = maximumBytesPerSecond
    }

    /// Creates a request with its headers as (name, value) pairs.
    ///
    /// Deprecated for one release: give ``headers`` as `HTTPFields` (docs/engine.md, "Breaking changes"). The
    /// pairs are kept as given, so a name that is not a token is still refused by ``DownloadEngine/add(_:start:)``.
    @available(*, deprecated, message: "pass headers as HTTPFields")
    public init(
        url: String, destination: String, sha256: String? = nil, overwrite: Bool = false,
        headers: [(name: String, value: String)], storesCredentials: Bool = false,
        namesFromResponse: Bool = false, revalidates: Bool = false, maximumBytesPerSecond: Int64? = nil
    ) {
        self.init(
            url: url, destination: destination, sha256: sha256, overwrite: overwrite,
            storesCredentials: storesCredentials, namesFromResponse: namesFromResponse, revalidates: revalidates,
            maximumBytesPerSecond: maximumBytesPerSecond)
        headerList = headers
    }
}

/// One redirect the engine followed.
public struct RedirectHop: Sendable, Hashable, Codable {
    /// The URL that answered with the redirect.
    public var from: String
    /// The absolute URL it pointed to.
    public var to: String
    /// The redirect status (301, 302, 303, 307 or 308).
    public var status: Int

    /// Creates a hop.
    public init(from: String, to: String, status: Int) {
        self.from = from
        self.to = to
        self.status = status
    }
}

/// A progress measurement for a task or a group.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes held in the partial file (or the destination when complete).
    public var bytes: Int64
    /// The complete length, when known.
    public var total: Int64?
    /// Smoothed transfer speed in bytes per second.
    public var bytesPerSecond: Double
    /// Estimated seconds left, when total and speed are known.
    public var eta: Double?

    /// Creates a progress value.
    public init(bytes: Int64, total: Int64?, bytesPerSecond: Double, eta: Double?) {
        self.bytes = bytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.eta = eta
    }

    /// The fraction done in `0...1`, when the total is known.
    public var fraction: Double? {
        guard let total, total > 0 else { return total == 0 ? 1 : nil }
        return min(1, Double(bytes) / Double(total))
    }
}

/// How a task ended (or stopped).
public enum DownloadResult: Sendable, Hashable {
    /// Verified and in place at `path`, with its length and its SHA-256 (`nil` when
    /// ``DownloadConfiguration/Verification/lengthOnly`` computed none).
    case completed(path: String, sha256: String?, bytes: Int64)
    /// Gave up.
    case failed(DownloadError)
    /// Cancelled.
    case cancelled
    /// Paused (by `pause` or shutdown); resumable.
    case paused
}

/// A read-only view of a task.
public struct DownloadTaskSnapshot: Sendable, Hashable {
    /// The task's identifier.
    public var id: DownloadTaskID
    /// The original URL.
    public var url: String
    /// The last resolved URL, after redirects, if any were followed.
    public var resolvedURL: String?
    /// Every redirect followed during the current resolution, in order.
    public var redirects: [RedirectHop]
    /// The absolute destination path.
    public var destination: String
    /// The state.
    public var state: DownloadState
    /// The latest progress.
    public var progress: DownloadProgress
    /// The error of a failed task.
    public var error: DownloadError?
    /// The group the task belongs to, if any.
    public var group: DownloadGroupID?
    /// Whether the task's last run revalidated its completed file and the server answered 304: the file was kept
    /// as it was (see ``DownloadRequest/revalidates``).
    public var notModified: Bool = false
}

/// Identifies a batch of tasks added together.
public struct DownloadGroupID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier's text.
    public let rawValue: String
    /// The identifier's text.
    public var description: String { rawValue }
}

/// A batch of tasks with one completion when all members end.
public struct DownloadGroup: Sendable, Hashable {
    /// The group's identifier.
    public let id: DownloadGroupID
    /// The members, in the order they were added.
    public let members: [DownloadTaskID]
}

/// Something that happened to a task or group.
///
/// Order, per task: `added`, then `stateChanged(.waiting)`, `stateChanged(.running)`; while running any number of
/// `redirected` and `progress`; a retry is `retrying` then `stateChanged(.retrying)`, and later
/// `stateChanged(.running)` again. The end is `completed` or `failed` immediately followed by the terminal
/// `stateChanged`, or `stateChanged(.paused)` / `stateChanged(.cancelled)`. A final `progress` with all bytes
/// precedes `completed`. For a group, `groupFinished` follows the last member's terminal `stateChanged`.
/// Events of different tasks interleave.
public enum DownloadEvent: Sendable {
    /// A task was added (or re-added from the state directory).
    case added(DownloadTaskID, url: String)
    /// A task's state changed.
    case stateChanged(DownloadTaskID, DownloadState)
    /// Bytes arrived (at most one event per ``DownloadConfiguration/progressInterval``).
    case progress(DownloadTaskID, DownloadProgress)
    /// A redirect was followed.
    case redirected(DownloadTaskID, RedirectHop)
    /// An attempt failed and will be retried (`attempt` counts from 1) after `delay`.
    case retrying(DownloadTaskID, attempt: Int, delay: Duration, error: DownloadError)
    /// The task finished and its file is in place; `sha256` is `nil` when no digest was computed
    /// (``DownloadConfiguration/Verification/lengthOnly``).
    case completed(DownloadTaskID, path: String, sha256: String?, bytes: Int64)
    /// The task failed.
    case failed(DownloadTaskID, DownloadError)
    /// Every member of a group reached a terminal state (or paused).
    case groupFinished(DownloadGroupID, results: [DownloadTaskID: DownloadResult])
}
