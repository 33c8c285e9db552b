import NIOCore

/// One connection of an `HTTP2Listener`, shared by the exchanges on it: who the peer is, what TLS negotiated, and
/// how a fault of one stream ended the connection for every stream on it.
///
/// Confined to the connection's event loop, as its streams are: made in
/// the connection's initializer and touched only by its handlers, so the unchecked conformance only lets NIO's
/// `@Sendable` initializer closures carry it to that loop.
final class HTTP2ConnectionState: @unchecked Sendable {
    /// The server-wide connection number (shared with the libmicrohttpd daemons' count).
    let id: Int
    let peerAddress: String
    let peerPort: Int
    /// Whether the connection came in over TLS (the `--h2-port` listener).
    let isTLS: Bool
    /// The protocol ALPN chose (`h2`, `http/1.1`); nil without TLS or when the client offered none.
    var alpn: String?
    /// The protocols the client's ClientHello offered, in its order; nil without TLS or when it offered none.
    var alpnOffered: [String]?
    /// Set when a stream's fault ended the connection: what every other open stream of it is journaled as.
    var endedBy: JournalOutcome?
    /// Set by a graceful GOAWAY: the connection closes once the stream that sent it is complete.
    var closesAfterStream: HTTP2StreamNumber?
    /// The highest stream whose answer has begun: a GOAWAY names no stream below it, since it was processed.
    var highestAnswered: HTTP2StreamNumber = 0
    /// The last-stream-id of a GOAWAY this server sent: streams above it are not answered.
    var goAwayLast: HTTP2StreamNumber?
    /// Ends the connection from under NIOHTTP2 (see `ConnectionCloser`); nil until the pipeline is made.
    var closer: ConnectionCloser?
    /// Whether `HTTP2ConnectionHandler` is handing on the frames of one read (from its first frame to the read's end).
    var inRead = false
    /// When the latest read from the socket had returned (`SocketReadClock`): every byte a frame handled now carries
    /// had been read by then (`IncomingRequest.readBy`).
    var socketReadAt: ContinuousClock.Instant?
    /// Whether a flush asked for during the read in progress waits for its end.
    var flushPending = false

    init(id: Int, peerAddress: String, peerPort: Int, isTLS: Bool) {
        self.id = id
        self.peerAddress = peerAddress
        self.peerPort = peerPort
        self.isTLS = isTLS
    }

    /// Flushes the connection now, or at the end of the read in progress: the answers to the requests of one read
    /// then leave in one socket write, as a stream channel's flushes did (NIOHTTP2's multiplexer holds them until its
    /// parent's read completes); a flush per stream cost a `write` per 4 KiB answer in bench case 11.
    func flush(_ context: ChannelHandlerContext) {
        if inRead {
            flushPending = true
        } else {
            context.flush()
        }
    }

    /// The address and port of `channel`'s peer, as the journal records them.
    static func peer(of channel: any Channel) -> (address: String, port: Int) {
        guard let remote = channel.remoteAddress else { return ("unknown", 0) }
        return (remote.ipAddress ?? "unknown", remote.port ?? 0)
    }
}

/// A stream's identifier as the journal records it (HTTP/2 stream ids are 31-bit).
typealias HTTP2StreamNumber = Int
