import CMicroHTTPD

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let readBody: @convention(c) (UnsafeMutableRawPointer?, UInt64, UnsafeMutablePointer<CChar>?, Int) -> Int = {
    pointer, position, buffer, capacity in
    let reader = Unmanaged<BodyReader>.fromOpaque(pointer!).takeUnretainedValue()
    return reader.read(position: position, into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
}

let freeBody: @convention(c) (UnsafeMutableRawPointer?) -> Void = { pointer in
    guard let pointer else { return }
    Unmanaged<BodyReader>.fromOpaque(pointer).release()
}

/// Bytes a paced body sends per wake-up: a twentieth of a second's worth at high rates, and at low rates up to
/// 16 KiB but never more than a tenth of a second's worth.
///
/// Each wake-up costs a suspend, a resume and a pass of the event loop, so 3 KiB slices at 64 KiB/s (the old
/// rate / 20) made 20 wake-ups a second per connection; a tenth of a second halves that, and still keeps any
/// 2-second window within 5% of the rate (at most one slice early).
func paceQuantum(rate: UInt64) -> UInt64 {
    max(1, rate / 20, min(16 * 1024, rate / 10))
}

/// Produces a body for libmicrohttpd's content-reader callback and applies the delivery faults.
final class BodyReader: @unchecked Sendable {
    private let body: ResponseBody
    private let delivery: Delivery
    private let context: RequestContext
    private let connection: OpaquePointer
    private unowned let daemon: MicroHTTPDaemon
    private var stalled = false
    /// When the stall's wait is over, while the response waits on it.
    private var stallEnds: ContinuousClock.Instant?
    /// When a drop stops watching how the client takes it (see `drop()`).
    private var dropWatchEnds: ContinuousClock.Instant?
    private var paceStart: ContinuousClock.Instant?
    /// The body position at which pacing started (after a stall, pacing starts afresh).
    private var paceOrigin: UInt64 = 0

    init(plan: ResponsePlan, context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) {
        self.body = plan.body
        self.delivery = plan.delivery
        self.context = context
        self.connection = connection
        self.daemon = daemon
    }

    func read(position: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        // libmicrohttpd asks for `position` only once every byte before it has been written to the socket,
        // so this, not what the previous call handed over (up to a block more), is what has been sent.
        context.bodyBytesSent = position
        if daemon.isStopping { return end(.stalled) }
        let length = body.length
        let atEnd = position >= length
        var allowed = atEnd ? 0 : min(UInt64(buffer.count), length - position)
        if !delivery.faults.isEmpty {
            for fault in delivery.faults {
                if let answer = apply(fault, position: position, length: length, allowed: &allowed) { return answer }
            }
        }
        if atEnd { return cmhd_reader_end_of_stream() }
        let count = Int(allowed)
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        guard fill(target, position: position) else { return end(.dropped) }
        if !delivery.faults.isEmpty {
            for fault in delivery.faults { afterFill(fault, target: target, position: position, length: length) }
        }
        return count
    }

    /// Applies one body fault before the bytes at `position` are filled in: it may end the body now (its answer to
    /// libmicrohttpd), or lower `allowed`, the bytes this read may hand over (0 at the end of the body).
    ///
    /// - Returns: the read's answer when the fault ends or suspends it, nil to go on.
    private func apply(_ fault: BodyFault, position: UInt64, length: UInt64, allowed: inout UInt64) -> Int? {
        let atEnd = position >= length
        switch fault {
        case .malformedChunk(let after):
            if position >= min(after, length) { return malformedChunk() }
            allowed = min(allowed, after - position)
        case .stall(let after, let duration):
            if atEnd { return nil }
            if !stalled {
                if position >= after {
                    stalled = true
                    context.faultFired = true
                    paceStart = nil
                    stallEnds = ContinuousClock.now + duration
                    context.stalling = true
                } else {
                    allowed = min(allowed, after - position)
                    // These bytes reach the stall point: once they are out the response holds, whether or not the
                    // reader is called again before the client gives up.
                    if after - position <= allowed { context.stalling = true }
                }
            }
            if stallEnds != nil, let waiting = waitOutStall() { return waiting }
        case .end(let after, let ending):
            // Chunked, an end exactly at the end of the body still withholds the last chunk (the documented meaning
            // of chunked with drop-after): the client holds every byte but cannot tell that the body is complete.
            if atEnd && !(delivery.chunked && after == length) { return nil }
            if position >= after {
                switch ending {
                case .drop: return drop()
                case .reset: return reset()
                case .truncate: return truncate()
                }
            }
            allowed = min(allowed, after - position)
        case .pace(let rate):
            if atEnd { return nil }
            let now = ContinuousClock.now
            let start: ContinuousClock.Instant
            if let paceStart {
                start = paceStart
            } else {
                start = now
                paceStart = now
                paceOrigin = position
            }
            // Bytes are due on a straight line from the pace origin, so rounding never accumulates.
            let sentSinceStart = position - paceOrigin
            let due =
                start + .nanoseconds(Int64(clamping: sentSinceStart.multipliedFullWidth(by: 1_000_000_000).low / rate))
            if due > now + .milliseconds(1) {
                if daemon.suspend(connection, for: due - now) { return 0 }
                return end(.stalled)
            }
            allowed = min(allowed, paceQuantum(rate: rate))
        case .lengthDelta:
            // Longer: the body ends short of the declared length.
            if atEnd { context.faultFired = true }
        case .garbage:
            break
        }
        return nil
    }

    /// Applies one body fault to the bytes just filled in at `position`.
    private func afterFill(_ fault: BodyFault, target: UnsafeMutableRawBufferPointer, position: UInt64, length: UInt64)
    {
        let count = UInt64(target.count)
        switch fault {
        case .lengthDelta(let delta):
            // Shorter takes effect where the body passes the declared length: a client that closes before then left
            // a response that had not lied to it yet.
            if delta < 0, position + count > length - min(length, UInt64(-delta)) { context.faultFired = true }
        case .garbage(let after):
            guard position + count > after else { return }
            context.faultFired = true
            // The generator under a seed and version of its own: bytes that differ from the representation's.
            let start = Int(min(count, after > position ? after - position : 0))
            Self.garbage.fill(
                UnsafeMutableRawBufferPointer(rebasing: target[start...]), offset: position + UInt64(start))
        default:
            break
        }
    }

    /// The source of `garbage-after`'s bytes.
    private static let garbage = ContentGenerator(seed: 0xDEAD_BEEF_0BAD_F00D, version: 0x5EED)

    /// Waits out the rest of the stall in slices, looking at the socket between them: a client that gave up on the
    /// stall ends the response now, as stalled, instead of when the stall would have ended (see
    /// `MicroHTTPDaemon.watchInterval`). Returns 0 to be asked again, the end of the response, or nil once the stall
    /// is over.
    private func waitOutStall() -> Int? {
        guard let ends = stallEnds else { return nil }
        let now = ContinuousClock.now
        if now >= ends {
            stallEnds = nil
            context.stalling = false
            return nil
        }
        if daemon.peerHasClosed(connection) { return end(.stalled) }
        if daemon.suspend(connection, for: min(ends - now, MicroHTTPDaemon.watchInterval)) { return 0 }
        return end(.stalled)
    }

    /// `drop-after`: ends the stream (FIN) after the bytes so far; on plain HTTP, then waits up to
    /// `dropWatch` for the client's answer, which tells whether it met the drop. A client that read up to the end
    /// of stream closes in order (FIN): it met the drop. One that closes with bytes it has not read resets the
    /// connection (RST): it left the response before reaching the drop (a probe that read the first bytes and closed,
    /// with the kernel's buffers holding the rest), and the response is journaled as `client-closed` and abandoned,
    /// so the probe does not use up the scenario's faulted attempt. Over TLS the drop is libmicrohttpd's own close
    /// (with close_notify, which a bare shutdown would leave out) and is not watched.
    private func drop() -> Int {
        let fd = cmhd_connection_fd(connection)
        guard fd >= 0, !daemon.isTLS else { return end(.dropped) }
        let now = ContinuousClock.now
        if dropWatchEnds == nil {
            _ = shutdown(fd, Int32(SHUT_WR))
            dropWatchEnds = now + Self.dropWatch
            context.faultFired = true
            context.openExchange?.dropWatched.store(true, ordering: .releasing)
            var ended = timespec()
            clock_gettime(CLOCK_REALTIME, &ended)
            context.endedAt = ended
        }
        switch cmhd_peer_departure(fd) {
        case 2:
            // Not a fault it met after all.
            context.faultFired = false
            context.outcome = .clientClosed
            return endWithError()
        case 1:
            return end(.dropped)
        default:
            guard let ends = dropWatchEnds, now < ends,
                daemon.suspend(connection, for: min(ends - now, Self.dropWatchInterval))
            else { return end(.dropped) }
            return 0
        }
    }

    /// How long a drop watches for the client's answer; a client still holding the connection then (reading slowly
    /// through what its buffers hold) is taken to have met the drop.
    static let dropWatch: Duration = .seconds(1)
    /// How often a drop looks: a client that met the drop usually closes at once, and the entry's end time should
    /// stay close to the drop's.
    static let dropWatchInterval: Duration = .milliseconds(10)

    private func end(_ outcome: JournalOutcome) -> Int {
        context.outcome = outcome
        context.faultFired = true
        return endWithError()
    }

    /// libmicrohttpd's answer that ends the body here and closes the connection, once the daemon has been asked to
    /// come back to it: otherwise a connection closed this way after a wait kept its socket open (see
    /// `MicroHTTPDaemon.revisit(_:)`).
    private func endWithError() -> Int {
        daemon.revisit(connection)
        return cmhd_reader_end_with_error()
    }

    /// `bad-chunk-after`: where the next chunk-size line belongs, one that is not hexadecimal, then a close.
    ///
    /// libmicrohttpd writes chunk framing itself and has no way to spoil it, so the line goes straight to the
    /// socket: this reader is only asked for the next chunk once every byte of the previous one has been written
    /// (see `read`), so nothing of libmicrohttpd's is still waiting to go out before it. A raw write like this is
    /// possible on plain HTTP only.
    private func malformedChunk() -> Int {
        let fd = cmhd_connection_fd(connection)
        if fd >= 0 {
            let line = Array(Self.malformedChunkLine.utf8)
            _ = line.withUnsafeBytes { cmhd_send_raw(fd, $0.baseAddress, $0.count) }
        }
        return end(.dropped)
    }

    /// Not a chunk size: `z` is no hexadecimal digit. A lenient parser that reads hex digits up to the first other
    /// character reads 0 here, the last chunk, and takes the truncated body for complete: the fault catches that.
    static let malformedChunkLine = "zz-not-a-chunk-size\r\n"

    /// Ends the connection with a TCP RST once the bytes already written have left, so the peer sees
    /// exactly `reset-after` bytes and then the reset.
    private func reset() -> Int {
        let fd = cmhd_connection_fd(connection)
        if fd >= 0 {
            let deadline = ContinuousClock.now + .seconds(2)
            while cmhd_unsent_bytes(fd) > 0 && ContinuousClock.now < deadline {
                usleep(1000)
            }
            _ = cmhd_abort_with_reset(fd)
        }
        return end(.reset)
    }

    /// `tls-truncate-after`: ends the TCP stream (FIN) before libmicrohttpd closes the connection, so its TLS
    /// close_notify can no longer be written: the peer sees the bytes sent so far and then a bare end of stream.
    /// libmicrohttpd only asks for this position once every byte before it has gone to the socket (see `read`).
    /// On plain HTTP this is an ordinary close, the same as `drop-after`.
    private func truncate() -> Int {
        let fd = cmhd_connection_fd(connection)
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
        return end(.truncated)
    }

    private func fill(_ target: UnsafeMutableRawBufferPointer, position: UInt64) -> Bool {
        switch body {
        case .empty:
            return target.isEmpty
        case .literal(let bytes):
            let start = Int(position)
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<start + target.count]))
            }
            return true
        case .content(let source, let offset, _):
            return source.read(offset: offset + position, into: target)
        case .multipart(let multipart, let source):
            var written = 0
            var segmentStart: UInt64 = 0
            for segment in multipart.segments {
                let segmentLength = segment.byteCount
                let segmentEnd = segmentStart + segmentLength
                let cursor = position + UInt64(written)
                if cursor < segmentEnd && written < target.count {
                    let inner = cursor - segmentStart
                    let count = Int(min(UInt64(target.count - written), segmentEnd - cursor))
                    let slice = UnsafeMutableRawBufferPointer(rebasing: target[written..<written + count])
                    switch segment {
                    case .literal(let bytes):
                        bytes.withUnsafeBytes { source in
                            slice.copyMemory(
                                from: UnsafeRawBufferPointer(rebasing: source[Int(inner)..<Int(inner) + count]))
                        }
                    case .payload(let range):
                        guard source.read(offset: range.lowerBound + inner, into: slice) else { return false }
                    }
                    written += count
                }
                segmentStart = segmentEnd
                if written == target.count { break }
            }
            return written == target.count
        }
    }
}

extension MultipartByteranges.Segment {
    /// How many body bytes this segment contributes.
    var byteCount: UInt64 {
        switch self {
        case .literal(let bytes): UInt64(bytes.count)
        case .payload(let range): range.upperBound - range.lowerBound + 1
        }
    }
}
