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

/// How a body is delivered: its framing, and the faults that change its timing, its bytes past a point, and the
/// connection's fate.
struct Delivery: Hashable, Sendable {
    /// Wait this long before the status line.
    var delay: Duration?
    /// Send with chunked transfer coding instead of Content-Length.
    var chunked = false
    /// Send the body chunked and declare its length in Content-Length too.
    var chunkedWithLength = false
    /// What the body reader does at points of the body, in the order it applies them (see `BodyFault.precedence`).
    var faults: [BodyFault] = []
    /// Send no answer at all: the connection stays silent this long (unless the client closes it or the server
    /// stops first), then is closed without a byte (`head=stall`).
    var silence: Duration?
    /// What an HTTP/2 front end does before the answer's HEADERS; the HTTP/1.1 front end refuses the keys that set it.
    var http2 = HTTP2Delivery()

    /// Whether the body can go out through sendfile: nothing watches or paces it.
    var isPlain: Bool {
        delay == nil && faults.isEmpty && !chunked && !chunkedWithLength && silence == nil && http2 == HTTP2Delivery()
    }

    /// The declared Content-Length's distance from the body's length (`length-delta`), if it lies.
    var lengthDelta: Int64? {
        for case .lengthDelta(let delta) in faults { return delta }
        return nil
    }

    /// Whether the response stalls at some point (`stall-after`), or never comes (`head=stall`).
    var stalls: Bool {
        silence != nil || faults.contains { if case .stall = $0 { true } else { false } }
    }

    /// Whether the connection must close after this response (a framing or content fault: the next response on
    /// it could not be told apart from the fault).
    var closesConnection: Bool {
        faults.contains { fault in
            switch fault {
            case .lengthDelta, .garbage: true
            default: false
            }
        }
    }

    /// Whether libmicrohttpd is told the body's size is unknown: it then chunks the body, unless the response's
    /// flags ask for a body delimited by closing the connection (`length-delta`).
    var hasUnknownSize: Bool {
        chunked || chunkedWithLength
            || faults.contains { fault in
                switch fault {
                case .lengthDelta, .malformedChunk: true
                default: false
                }
            }
    }

    /// Whether libmicrohttpd is told the size is unknown for an answer to GET (`isHead` false) or HEAD: as
    /// ``hasUnknownSize`` says, except that an answer to HEAD is never chunked.
    ///
    /// libmicrohttpd 0.9.75 ends a chunked answer to HEAD with the last chunk (`0` CRLF CRLF), bytes a
    /// HEAD answer must not carry (RFC 9110 §9.3.2). A keep-alive client reads them as the start of its next answer:
    /// lftp's `pget` took the following GET's answer for HTTP/0.9 and saved its head and chunk lines as the file. So
    /// HEAD gets the body's length in Content-Length (RFC 9110 §8.6: the length a GET's content would have), as for
    /// an unfaulted body, and nothing after its head.
    func leavesSizeUnknown(forHEAD isHead: Bool) -> Bool {
        hasUnknownSize && !(isHead && lengthDelta == nil)
    }
}

/// What an HTTP/2 front end does on the connection or the stream before an answer's HEADERS.
struct HTTP2Delivery: Hashable, Sendable {
    /// How the stream is refused instead of answered.
    enum Refusal: Hashable, Sendable {
        /// RST_STREAM with this code before any HEADERS (`rst-stream-after=0`).
        case resetStream(FaultPlan.StreamErrorCode)
        /// GOAWAY with a last-stream-id below the stream, then a close (`goaway-refuse`).
        case goAway
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS to announce on the connection first (`max-concurrent-streams`).
    var maxConcurrentStreams: UInt32?
    /// Refuse the stream instead of answering it.
    var refusal: Refusal?
    /// Send no content-length (`no-content-length`).
    var omitsContentLength = false
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
