/// One thing the body reader does to a body as it goes out, at a byte position: a small value built from the fault
/// plan (each key's `FaultKey.bodyFault`), applied by `BodyReader` in `precedence` order.
///
/// Positions count body bytes (after any chunk framing is taken away); every value is checked at each read.
enum BodyFault: Hashable, Sendable {
    /// How the connection ends at an `end` fault.
    enum Ending: Hashable, Sendable {
        /// A clean close, FIN (over TLS close_notify first): `drop-after`.
        case drop
        /// A TCP RST: `reset-after`.
        case reset
        /// A FIN without TLS's close_notify: `tls-truncate-after`.
        case truncate
        /// HTTP/2: RST_STREAM with this code, the connection left open: `rst-stream-after`.
        case resetStream(FaultPlan.StreamErrorCode)
        /// HTTP/2: GOAWAY naming this stream, then a close: `goaway-after` with `goaway=close`.
        case goAway
    }

    /// At this position, a chunk-size line that is not hexadecimal instead of the next chunk, then a close.
    case malformedChunk(after: UInt64)
    /// At this position, send nothing for the duration, once.
    case stall(after: UInt64, for: Duration)
    /// At this position, end the connection this way. With chunked framing an end at exactly the body's length still
    /// withholds the last chunk.
    case end(after: UInt64, Ending)
    /// Pace the body at this many bytes per second (above zero).
    case pace(bytesPerSecond: UInt64)
    /// The declared Content-Length is this far off the body; the reader marks where the lie takes effect.
    case lengthDelta(Int64)
    /// From this position on, bytes of no representation instead of the body's.
    case garbage(after: UInt64)
    /// HTTP/2: at this position, GOAWAY naming this stream as the last, once; the body goes on to its end, then the
    /// connection closes (`goaway-after` with `goaway=graceful`).
    case goAway(after: UInt64)

    /// The order the reader applies faults in: a malformed chunk line wins over every other fault at its position,
    /// a stall comes before an end at the same point, pacing limits what is left.
    var precedence: Int {
        switch self {
        case .malformedChunk: 0
        case .stall: 1
        case .end: 2
        case .pace: 3
        case .lengthDelta: 4
        case .garbage: 5
        case .goAway: 6
        }
    }
}

extension FaultPlan {
    /// The body faults of this plan, in the order the body reader applies them.
    var bodyFaults: [BodyFault] {
        var faults: [BodyFault] = []
        for key in FaultKey.all {
            if let make = key.bodyFault, let fault = make(self) { faults.append(fault) }
        }
        if faults.count > 1 { faults.sort { $0.precedence < $1.precedence } }
        return faults
    }
}
