import NIOCore
import NIOHTTP2

/// A stream's body and its endings: the program that writes DATA as the window and the socket allow, and the faults
/// that end the stream (RST_STREAM) or the connection under it (GOAWAY, a close, a TCP reset).
extension HTTP2StreamHandler {

    /// Runs the body program while the stream is writable and less than ``inFlightLimit`` of its DATA waits to reach
    /// the socket; called again when either changes. A call made while it runs (a write completing inside its flush)
    /// makes it go round once more instead of running inside itself.
    func pump() {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        repeat {
            pumpAgain = false
            pumpOnce()
        } while pumpAgain && !finished
        pumping = false
    }

    /// The most DATA bytes of a stream written but not yet in the socket.
    ///
    /// The stream's own bound, so that the connection's socket channel never has to stop being writable: NIOHTTP2
    /// 1.46.0 asserts (`ControlFrameBuffer`, "Received flush data frames while buffering control frames") when the
    /// connection turns writable again while control frames it buffered meanwhile were not flushed yet, which a
    /// download at full speed reached in the tests. The connection's high water mark is set far above the sum of
    /// these bounds (see `HTTP2Listener`).
    static let inFlightLimit: UInt64 = 256 << 10

    func pumpOnce() {
        guard !finished, headSent, !pumpHeld, let context, var program, let plan else { return }
        defer { self.program = program }
        var wrote = false
        defer { if wrote { connection.flush(context) } }
        while context.channel.isWritable && position - sent < Self.inFlightLimit {
            let now = ContinuousClock.now
            switch program.next(position: position, capacity: blockSize, now: now) {
            case .send(let count):
                var buffer = context.channel.allocator.buffer(capacity: count)
                let filled = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                    let target = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                    guard plan.body.fill(target, position: position) else { return 0 }
                    program.filled(target, position: position)
                    return count
                }
                guard filled == count else {
                    // The file could not be read: the stream ends, as a dropped one.
                    faultFired = true
                    resetStream(.internalError, context: context, outcome: .dropped)
                    return
                }
                position += UInt64(count)
                // The last bytes of an unfaulted body carry END_STREAM themselves.
                let last = position == plan.body.length && program.faults.isEmpty
                let promise = context.eventLoop.makePromise(of: Void.self)
                lastWrite = promise.futureResult
                write(.data(.init(data: .byteBuffer(buffer), endStream: last)), context: context, promise: promise)
                wrote = true
                if last {
                    // One callback: a complete answer counts its whole body, and a failed last write adds nothing.
                    promise.futureResult.assumeIsolated().whenComplete { [self] in complete($0) }
                    ending = .complete
                    pumpHeld = true
                    return
                }
                let bytes = UInt64(count)
                promise.futureResult.assumeIsolated().whenSuccess { [self] in
                    // A journaled answer's count is final (a complete one counts its whole body).
                    guard !finished else { return }
                    sent += bytes
                    if position - sent < Self.inFlightLimit { pump() }
                }
            case .wait(let until), .stall(let until):
                noteProgram(program)
                pumpHeld = true
                schedule(after: until - now) { handler in
                    handler.pumpHeld = false
                    handler.pump()
                }
                return
            case .complete:
                let promise = context.eventLoop.makePromise(of: Void.self)
                promise.futureResult.assumeIsolated().whenComplete { [self] in complete($0) }
                let empty = context.channel.allocator.buffer(capacity: 0)
                write(.data(.init(data: .byteBuffer(empty), endStream: true)), context: context, promise: promise)
                wrote = true
                ending = .complete
                pumpHeld = true
                return
            case .goAway:
                // Graceful: this stream is the last the connection serves; it goes on to its end. The GOAWAY goes
                // out beside the DATA already written, so the client may see it before bytes the window still holds.
                connection.closesAfterStream = streamID
                connection.goAwayLast = max(streamID, connection.highestAnswered)
                context.writeAndFlush(
                    NIOAny(
                        HTTP2Frame(
                            streamID: .rootStream,
                            payload: .goAway(
                                lastStreamID: HTTP2StreamID(max(streamID, connection.highestAnswered)),
                                errorCode: .noError, opaqueData: nil))),
                    promise: nil)
            case .end(let ending):
                noteProgram(program)
                self.program = program
                pumpHeld = true
                context.flush()
                guard let lastWrite else {
                    end(ending, context: context)
                    return
                }
                lastWrite.assumeIsolated().whenComplete { [self] _ in
                    guard !finished, let context = self.context else { return }
                    end(ending, context: context)
                }
                return
            }
            noteProgram(program)
        }
    }

    func noteProgram(_ program: BodyProgram) {
        if program.faultFired { faultFired = true }
    }

    /// The answer went out complete: journal it, and close the connection after a graceful GOAWAY.
    /// The answer's last frame was written (`result` success): journal it complete. A last frame that could not be
    /// written (the connection closed under it) ends the answer as the connection did.
    func complete(_ result: Result<Void, any Error>) {
        if case .success = result {
            finish(.complete)
        } else {
            ending = connection.endedBy ?? .clientClosed
            finish(connection.endedBy ?? .clientClosed)
        }
    }

    /// Carries out an ending of the body program.
    func end(_ ending: BodyProgram.Ending, context: ChannelHandlerContext) {
        faultFired = true
        switch ending {
        case .resetStream(let code):
            resetStream(code, context: context)
        case .goAway:
            goAway(lastStream: max(streamID, connection.highestAnswered), closing: .dropped, context: context)
        case .reset:
            closeConnection(.reset, context: context, abort: true)
        case .drop, .truncate, .malformedChunk:
            // Truncation and chunk lines are refused on this front end (`HTTP2StreamConnection.refusal`); a drop
            // ends the connection and every stream on it.
            closeConnection(.dropped, context: context, abort: false)
        }
    }

    /// RST_STREAM with `code` after what was written: the connection goes on.
    func resetStream(
        _ code: FaultPlan.StreamErrorCode, context: ChannelHandlerContext, outcome: JournalOutcome = .streamReset
    ) {
        context.flush()
        ending = outcome
        pumpHeld = true
        let payload = HTTP2Frame.FramePayload.rstStream(HTTP2ErrorCode(networkCode: Int(code.value)))
        writeAndFlush(payload, context: context).assumeIsolated().whenComplete { [self] _ in
            finish(outcome)
        }
    }

    /// GOAWAY naming `lastStream`, then a close of the connection once it is written.
    func goAway(lastStream: Int, closing outcome: JournalOutcome, context: ChannelHandlerContext) {
        context.flush()
        ending = outcome
        connection.endedBy = connection.endedBy ?? .dropped
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: HTTP2StreamID(lastStream), errorCode: .noError, opaqueData: nil))
        pumpHeld = true
        connection.goAwayLast = lastStream
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(frame), promise: written)
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            finish(outcome)
            _ = connection.closer?.closeGently()
        }
    }

    /// Ends the connection under every stream on it: a clean close, or (`abort`) a TCP reset.
    func closeConnection(_ outcome: JournalOutcome, context: ChannelHandlerContext, abort: Bool) {
        context.flush()
        connection.endedBy = outcome
        ending = outcome
        pumpHeld = true
        // Every DATA byte before the fault's point is in the socket by now (see `lastWrite`).
        if abort, let closing = connection.closer?.abort() {
            closing.assumeIsolated().whenComplete { [self] _ in finish(outcome) }
        } else {
            finish(outcome)
            _ = connection.closer?.closeGently()
        }
    }
}
