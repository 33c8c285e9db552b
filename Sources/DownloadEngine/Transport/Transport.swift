import HTTPVocabulary
import NIOCore
import Synchronization

/// A request as the engine hands it to a transport: always `GET`, never followed.
struct TransportRequest: Sendable {
    var url: String
    var headers: [(name: String, value: String)]
    /// The bandwidth limits its body is read under; `nil` without any.
    var pacing: ReadPacing? = nil
    /// A connection of its own the request must go over, never shared with a request of another lane: a segment's
    /// (see ``TransportLane``); nil: any connection of the pool.
    var lane: TransportLane? = nil
}

/// The connection of one segment of one segmented download, apart from every other one: with HTTP/2 every request to
/// an origin would otherwise share one connection, and a segmented download's point is parallel TCP flows.
struct TransportLane: Hashable, Sendable {
    /// The download the lanes belong to (``TransportLane/newOwner()``).
    var owner: Int
    /// The segment's connection number within it.
    var index: Int

    private static let owners = Atomic<Int>(0)

    /// A number no other download's lanes use.
    static func newOwner() -> Int { owners.wrappingAdd(1, ordering: .relaxed).newValue }
}

/// A response head plus a body to stream.
struct TransportResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: TransportBody

    /// The first value of a header, case-insensitively; `name` is lower case.
    func header(_ name: String) -> String? {
        // ASCII case folding in place: `lowercased()` allocated a string per header per lookup.
        headers.first { asciiCaseInsensitiveEqual($0.name.utf8, name.utf8) }?.value
    }
}

/// Where a response body goes.
///
/// The transport calls ``consume(_:)`` with each part in arrival order, one call at a time, on the connection's
/// event loop (or, for a body that had ended before the drain began, on the draining task), and reads the next part
/// from the connection only after the call returned. A sink that writes the part before
/// returning therefore leaves nothing received-but-unwritten in this process beyond the part in hand: that is what
/// bounds the bytes a `kill -9` costs.
protocol BodySink: AnyObject, Sendable {
    /// Takes one part of the body.
    ///
    /// - Parameter part: The next bytes of the body.
    /// - Returns: `false` when the sink wants no more bytes: the rest of the body is abandoned and the request
    ///   cancelled.
    /// - Throws: Ends the body with this error (the request is cancelled).
    func consume(_ part: ByteBuffer) throws -> Bool
}

extension BodySink {
    /// How many of a part's first `available` bytes to pass over because the file already holds them (a resume
    /// whose response starts before the bytes kept), taken off `skip`.
    static func skipping(_ skip: inout Int64, in available: Int) -> Int {
        let skipped = Int(min(Int64(available), skip))
        skip -= Int64(skipped)
        return skipped
    }
}

/// A response body, handed to a ``BodySink`` once the engine has decided to keep it.
struct TransportBody: Sendable {
    /// Feeds every part to the sink (first those that arrived before the call) and returns when the body ended.
    let drain: @Sendable (any BodySink) async throws -> Void
    /// Gives the body up: a request still running is cancelled. Harmless after the body ended.
    let abandon: @Sendable () -> Void
    /// Whether the whole body has already arrived and waits in memory (a small body, at most a few MiB).
    let isComplete: @Sendable () -> Bool

    /// Streams the body into `sink`.
    ///
    /// Returns once the body ended or the sink declined more bytes, and only after the sink's last call returned,
    /// so the caller may read the sink's state afterwards. Throws the sink's error, the transport's, or
    /// `CancellationError` when the calling task is cancelled (the request is cancelled with it).
    func drain(into sink: any BodySink) async throws { try await drain(sink) }
}

/// The engine's view of HTTP: one request, one streamed response, no redirects, no decompression.
///
/// The engine owns ranges, validators, redirects, retries and persistence; a transport only moves bytes, so another
/// one (URLSession) can be added without touching the resume rules.
protocol Transport: Sendable {
    /// Sends `request` and returns once the response head has arrived.
    func execute(_ request: TransportRequest) async throws -> TransportResponse
    /// Releases connections; the transport is unusable afterwards.
    func shutdown() async
    /// Closes the connections of the lanes of `owner` (a segmented download that ended).
    func releaseLanes(of owner: Int) async
}

extension Transport {
    /// A transport without lanes has none to release.
    func releaseLanes(of owner: Int) async {}
}

extension ResumePlanner.ResponseHead {
    /// The fields of `response` the planner reads.
    init(_ response: TransportResponse) {
        self.init(
            status: response.status, contentRange: response.header("content-range"),
            contentLength: response.header("content-length"), etag: response.header("etag"),
            lastModified: response.header("last-modified"), retryAfter: response.header("retry-after"),
            location: response.header("location"), contentEncoding: response.header("content-encoding"),
            contentType: response.header("content-type"))
    }
}
