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

/// Runs a body's program (`BodyProgram`) for libmicrohttpd's content-reader callback: fills the bytes it hands
/// over, and carries out its waits and endings on the connection.
final class BodyReader: @unchecked Sendable {
    private let body: ResponseBody
    private var program: BodyProgram
    private let context: RequestContext
    private let connection: OpaquePointer
    private unowned let daemon: MicroHTTPDaemon
    /// When a drop stops watching how the client takes it (see `drop()`).
    private var dropWatchEnds: ContinuousClock.Instant?

    /// Whether the socket's byte count can tell how much of a handed-over block was written (see
    /// `RequestContext.bodySocketBase`): plain TCP, and no chunk framing among the body bytes.
    private let countsSocketBytes: Bool

    init(plan: ResponsePlan, context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) {
        self.body = plan.body
        self.program = BodyProgram(plan: plan)
        self.context = context
        self.connection = connection
        self.daemon = daemon
        self.countsSocketBytes = !daemon.isTLS && !plan.delivery.leavesSizeUnknown(forHEAD: false)
    }

    func read(position: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        // libmicrohttpd asks for `position` only once every byte before it has been written to the socket,
        // so this, not what the previous call handed over (up to a block more), is what has been sent.
        context.bodyBytesSent = position
        if daemon.isStopping { return end(.stalled) }
        if program.faults.isEmpty {
            // The fast path: no fault to consult, no flag to carry over.
            let count = Int(min(UInt64(buffer.count), body.length - min(body.length, position)))
            if count == 0 { return cmhd_reader_end_of_stream() }
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            return body.fill(target, position: position) ? count : end(.dropped)
        }
        let now = ContinuousClock.now
        let step = program.next(position: position, capacity: buffer.count, now: now)
        noteProgram()
        switch step {
        case .send(let count):
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            guard body.fill(target, position: position) else { return end(.dropped) }
            program.filled(target, position: position)
            noteProgram()
            noteHandedOver(count, at: position)
            return count
        case .complete:
            return cmhd_reader_end_of_stream()
        case .wait(let due):
            if daemon.suspend(connection, for: due - now) { return 0 }
            return end(.stalled)
        case .stall(let ends):
            // In slices, looking at the socket between them: a client that gave up on the stall ends the response
            // now, as stalled, instead of when the stall would have ended (see `MicroHTTPDaemon.watchInterval`).
            if daemon.peerHasClosed(connection) { return end(.stalled) }
            if daemon.suspend(connection, for: min(ends - now, MicroHTTPDaemon.watchInterval)) { return 0 }
            return end(.stalled)
        case .end(.drop): return drop()
        case .end(.reset): return reset()
        case .end(.truncate): return truncate()
        case .end(.malformedChunk): return malformedChunk()
        case .end(.resetStream), .end(.goAway), .goAway:
            // HTTP/2 only: `MicroHTTPConnection.refusal` keeps these keys off this front end.
            return end(.dropped)
        }
    }

    /// Notes the block about to go to libmicrohttpd and, at the first one, where the body starts in the socket's
    /// count of bytes written (taken now, when every byte before `position` has been written and none after).
    /// Faulted bodies only: their ends (a stall, a stop, a client that leaves at the fault) are what the journal's
    /// byte count judges, while an unfaulted body a client leaves stays counted in blocks.
    private func noteHandedOver(_ count: Int, at position: UInt64) {
        context.bodyBytesHandedOver = position + UInt64(count)
        guard countsSocketBytes, context.bodySocketBase == nil else { return }
        let written = cmhd_bytes_written(cmhd_connection_fd(connection))
        if written >= 0 { context.bodySocketBase = written - Int64(clamping: position) }
    }

    /// Carries what the program noted into the request's context, for the journal.
    private func noteProgram() {
        if program.faultFired && !context.faultFired { context.faultFired = true }
        if program.stalling != context.stalling { context.stalling = program.stalling }
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
            let line = Array(BodyProgram.malformedChunkLine.utf8)
            _ = line.withUnsafeBytes { cmhd_send_raw(fd, $0.baseAddress, $0.count) }
        }
        return end(.dropped)
    }

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
}
