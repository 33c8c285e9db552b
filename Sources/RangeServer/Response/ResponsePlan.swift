/// Where the bytes of a response body come from.
///
/// A body is described, never materialised up front, so that a 1 TiB range costs nothing until it is sent.
enum ContentSource: Hashable, Sendable {
    /// Generated content (`/bytes`).
    case generated(ContentGenerator)
    /// A regular file below the root, open; read with `pread`, sent with `sendfile` through a duplicate.
    case file(OpenFile)
    /// Bytes held in memory: a representation encoded by the `encoding` fault.
    case bytes(SharedBytes)

    /// Fills `target` with the bytes at `offset`: generated, or read from the file.
    ///
    /// - Returns: `false` when the file could not be read in full.
    @inline(__always)
    func read(offset: UInt64, into target: UnsafeMutableRawBufferPointer) -> Bool {
        switch self {
        case .generated(let generator):
            generator.fill(target, offset: offset)
            return true
        case .file(let file):
            return file.read(offset: offset, into: target)
        case .bytes(let shared):
            return shared.read(offset: offset, into: target)
        }
    }
}

/// The body of a planned response.
enum ResponseBody: Hashable, Sendable {
    /// No body (304, HEAD-only plans, redirects with no text).
    case empty
    /// A small literal body: error text, index page, JSON from the control API.
    case literal([UInt8])
    /// `length` bytes of `source` starting at `offset`.
    case content(ContentSource, offset: UInt64, length: UInt64)
    /// A `multipart/byteranges` body over `source`.
    case multipart(MultipartByteranges, ContentSource)

    /// The exact number of body bytes a complete response carries.
    var length: UInt64 {
        switch self {
        case .empty: 0
        case .literal(let bytes): UInt64(bytes.count)
        case .content(_, _, let length): length
        case .multipart(let multipart, _): multipart.totalLength
        }
    }
}

/// How a body is delivered: the faults that change timing and connection fate, never the bytes.
struct Delivery: Hashable, Sendable {
    /// Wait this long before the status line.
    var delay: Duration?
    /// Close the connection after this many body bytes.
    var dropAfter: UInt64?
    /// Abort the connection with a TCP RST after this many body bytes.
    var resetAfter: UInt64?
    /// Close the TCP connection without TLS's close_notify after this many body bytes (a plain close on HTTP).
    var tlsTruncateAfter: UInt64?
    /// Pause once after this many body bytes, for `stallFor`.
    var stallAfter: UInt64?
    /// How long a stall lasts.
    var stallFor: Duration = .seconds(3600)
    /// Throttle the body to this many bytes per second.
    var rate: UInt64?
    /// Send with chunked transfer coding instead of Content-Length.
    var chunked = false
    /// Declare a Content-Length this far off the body's length, and close after the body.
    var lengthDelta: Int64?
    /// Send the body chunked and declare its length in Content-Length too.
    var chunkedWithLength = false
    /// Replace the body's bytes from this position on with pseudo-random ones, and close after the body.
    var garbageAfter: UInt64?
    /// Send this many body bytes in chunks, then a malformed chunk-size line, then close.
    var badChunkAfter: UInt64?

    /// Whether the body can go out through sendfile: nothing watches or paces it.
    var isPlain: Bool {
        delay == nil && dropAfter == nil && resetAfter == nil && tlsTruncateAfter == nil && stallAfter == nil
            && rate == nil && !chunked
            && lengthDelta == nil && garbageAfter == nil && !chunkedWithLength && badChunkAfter == nil
    }

    /// Whether the connection must close after this response (a framing or content fault: the next response on
    /// it could not be told apart from the fault).
    var closesConnection: Bool { lengthDelta != nil || garbageAfter != nil }

    /// Whether libmicrohttpd is told the body's size is unknown: it then chunks the body, unless the response's
    /// flags ask for a body delimited by closing the connection (`length-delta`).
    var hasUnknownSize: Bool { chunked || chunkedWithLength || lengthDelta != nil || badChunkAfter != nil }
}

/// Scenario bookkeeping carried into the journal.
struct ScenarioContext: Hashable, Sendable {
    var scenario: String
    var run: String
    var route: String
    var attempt: Int?
}

/// Everything the daemon needs to answer one request, decided before libmicrohttpd is touched.
struct ResponsePlan: Sendable {
    /// The status code.
    var status: Int
    /// Header fields in send order (Content-Length and Date are added by the daemon).
    var headers: [HeaderField]
    /// The body.
    var body: ResponseBody
    /// Timing and connection faults.
    var delivery = Delivery()
    /// The applied faults, as journaled (`drop-after=2400K`, ...).
    var faults: [String] = []
    /// Set when the request went through `/scenario/...`.
    var scenario: ScenarioContext?
    /// With `probability`: whether the draw applied the other faults; nil without `probability`.
    var faultsApplied: Bool?
    /// With `connection-cap`: the slot this response holds, given back when it ends (see `ConnectionCapCounter`).
    var capSlot: String?
    /// A `Repr-Digest` field still to compute; when set, the daemon calls ``completeDigest()`` off the pool
    /// thread before sending.
    var pendingDigest: PendingDigest?
    /// The real plan, still to be made by an embedder's asynchronous handler (a ``CustomRoute``); when set, the
    /// daemon suspends the connection, awaits it, and answers with what it returns.
    var deferred: (@Sendable () async -> ResponsePlan)?
    /// Whether the exchange goes into the journal (custom routes do not).
    var journaled = true

    init(status: Int, headers: [HeaderField] = [], body: ResponseBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A short text response, as used for errors and health checks.
    static func text(_ status: Int, _ text: String, headers: [HeaderField] = []) -> ResponsePlan {
        ResponsePlan(
            status: status,
            headers: [HeaderField("Content-Type", "text/plain; charset=utf-8")] + headers,
            body: .literal(Array((text + "\n").utf8))
        )
    }

    /// A response with a JSON body.
    static func json(_ status: Int, _ bytes: [UInt8]) -> ResponsePlan {
        ResponsePlan(status: status, headers: [HeaderField("Content-Type", "application/json")], body: .literal(bytes))
    }
}
