/// What a response's body does at each position, decided from its plan and the time alone: how many bytes go out
/// next, when to wait, where the body ends and how. Every front end runs the same program; it carries the steps out
/// on its own wire (libmicrohttpd's content reader in `Daemon/BodyReader.swift`, an in-memory runner in the tests).
///
/// The program holds what a body's faults remember between steps (whether the stall has happened, where pacing
/// started) and notes what the journal needs to know of them (``faultFired``, ``stalling``). It never touches a
/// socket, a clock or a thread: the caller passes the time, and waits, writes and closes itself.
struct BodyProgram: Sendable {
    /// What the front end does next.
    enum Step: Equatable, Sendable {
        /// Hand over this many bytes at the position: fill them with ``ResponseBody/fill(_:position:)``, then pass
        /// them to ``BodyProgram/filled(_:position:)``.
        case send(Int)
        /// Send nothing until then, and ask again: pacing.
        case wait(until: ContinuousClock.Instant)
        /// Send nothing until then, watching whether the peer leaves meanwhile, and ask again: a stall.
        case stall(until: ContinuousClock.Instant)
        /// The body is complete: end it as its framing says.
        case complete
        /// End the body here, this way.
        case end(Ending)
        /// HTTP/2: send GOAWAY naming this stream as the last one, then ask again (`goaway=graceful`): the body goes on,
        /// and the connection closes once it is complete.
        case goAway
    }

    /// How a body ends short of complete.
    enum Ending: Equatable, Sendable {
        /// A clean close after the bytes so far (`drop-after`).
        case drop
        /// A TCP reset once the bytes so far have left (`reset-after`).
        case reset
        /// A close without TLS's close_notify (`tls-truncate-after`).
        case truncate
        /// A chunk-size line that is not hexadecimal (``malformedChunkLine``), then a close (`bad-chunk-after`).
        case malformedChunk
        /// HTTP/2: RST_STREAM with this code; the connection and its other streams go on (`rst-stream-after`).
        case resetStream(FaultPlan.StreamErrorCode)
        /// HTTP/2: GOAWAY naming this stream, then a close of the connection (`goaway-after`, `goaway=close`).
        case goAway
    }

    /// Not a chunk size: `z` is no hexadecimal digit. A lenient parser that reads hex digits up to the first other
    /// character reads 0 here, the last chunk, and takes the truncated body for complete: the fault catches that.
    static let malformedChunkLine = "zz-not-a-chunk-size\r\n"

    /// The body's length, complete.
    let length: UInt64
    /// The body faults, in precedence order.
    let faults: [BodyFault]
    /// Whether the body goes out chunked (an end at exactly the body's length then still withholds the last chunk).
    let chunked: Bool

    /// Whether a fault that fires at a point of the body has been reached (see `JournalEntry.abandoned`).
    private(set) var faultFired = false
    /// Whether the body is inside its stall, or has handed over the bytes that reach it: a client that closes then
    /// leaves a stalled response.
    private(set) var stalling = false
    private var stalled = false
    /// Whether a graceful GOAWAY has been handed over.
    private var goAwayAnnounced = false
    /// When the stall's wait is over, while the body waits on it.
    private var stallEnds: ContinuousClock.Instant?
    private var paceStart: ContinuousClock.Instant?
    /// The body position at which pacing started (after a stall, pacing starts afresh).
    private var paceOrigin: UInt64 = 0

    /// The program of `plan`'s body.
    init(plan: ResponsePlan) {
        self.init(length: plan.body.length, delivery: plan.delivery)
    }

    /// The program of a body of `length` bytes delivered as `delivery` says.
    init(length: UInt64, delivery: Delivery) {
        self.length = length
        self.faults = delivery.faults
        self.chunked = delivery.chunked
    }

    /// The next step at `position` (every byte before it has gone out), at `now`, for a front end that may hand over
    /// up to `capacity` bytes at once.
    mutating func next(position: UInt64, capacity: Int, now: ContinuousClock.Instant) -> Step {
        let atEnd = position >= length
        var allowed = atEnd ? 0 : min(UInt64(capacity), length - position)
        for fault in faults {
            if let step = apply(fault, position: position, allowed: &allowed, now: now) { return step }
        }
        return atEnd ? .complete : .send(Int(allowed))
    }

    /// Applies one body fault before the bytes at `position` are filled in: it may end or hold the body now (the
    /// step it returns), or lower `allowed`, the bytes this step may hand over (0 at the end of the body).
    private mutating func apply(
        _ fault: BodyFault, position: UInt64, allowed: inout UInt64, now: ContinuousClock.Instant
    ) -> Step? {
        let atEnd = position >= length
        switch fault {
        case .malformedChunk(let after):
            if position >= min(after, length) { return fired(.end(.malformedChunk)) }
            allowed = min(allowed, after - position)
        case .stall(let after, let duration):
            if atEnd { return nil }
            if !stalled {
                if position >= after {
                    stalled = true
                    faultFired = true
                    paceStart = nil
                    stallEnds = now + duration
                    stalling = true
                } else {
                    allowed = min(allowed, after - position)
                    // These bytes reach the stall point: once they are out the response holds, whether or not the
                    // program is asked again before the client gives up.
                    if after - position <= allowed { stalling = true }
                }
            }
            if let ends = stallEnds {
                if now < ends { return .stall(until: ends) }
                stallEnds = nil
                stalling = false
            }
        case .end(let after, let ending):
            // Chunked, an end exactly at the end of the body still withholds the last chunk (the documented meaning
            // of chunked with drop-after): the client holds every byte but cannot tell that the body is complete.
            if atEnd && !(chunked && after == length) { return nil }
            if position >= after {
                switch ending {
                case .drop: return fired(.end(.drop))
                case .reset: return fired(.end(.reset))
                case .truncate: return fired(.end(.truncate))
                case .resetStream(let code): return fired(.end(.resetStream(code)))
                case .goAway: return fired(.end(.goAway))
                }
            }
            allowed = min(allowed, after - position)
        case .pace(let rate):
            if atEnd { return nil }
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
            if due > now + .milliseconds(1) { return .wait(until: due) }
            allowed = min(allowed, paceQuantum(rate: rate))
        case .lengthDelta:
            // Longer: the body ends short of the declared length.
            if atEnd { faultFired = true }
        case .garbage:
            break
        case .goAway(let after):
            if goAwayAnnounced { return nil }
            if position >= min(after, length) {
                goAwayAnnounced = true
                return fired(.goAway)
            }
            allowed = min(allowed, after - position)
        }
        return nil
    }

    private mutating func fired(_ step: Step) -> Step {
        faultFired = true
        return step
    }

    /// Applies the body faults to the bytes just filled in at `position`: `garbage-after` replaces them past its
    /// point, and a shorter `length-delta` notes where the lie takes effect.
    mutating func filled(_ target: UnsafeMutableRawBufferPointer, position: UInt64) {
        let count = UInt64(target.count)
        for fault in faults {
            switch fault {
            case .lengthDelta(let delta):
                // Shorter takes effect where the body passes the declared length: a client that closes before then
                // left a response that had not lied to it yet.
                if delta < 0, position + count > length - min(length, UInt64(-delta)) { faultFired = true }
            case .garbage(let after):
                guard position + count > after else { continue }
                faultFired = true
                // The generator under a seed and version of its own: bytes that differ from the representation's.
                let start = Int(min(count, after > position ? after - position : 0))
                Self.garbage.fill(
                    UnsafeMutableRawBufferPointer(rebasing: target[start...]), offset: position + UInt64(start))
            default:
                continue
            }
        }
    }

    /// The source of `garbage-after`'s bytes.
    private static let garbage = ContentGenerator(seed: 0xDEAD_BEEF_0BAD_F00D, version: 0x5EED)
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
