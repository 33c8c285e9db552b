import Foundation
import NIOCore

/// A segment's ``BodySink``: writes each part at the segment's position, stops at the segment's end (which a split
/// may lower while the body streams), and after each write buffer records the new position in the segment log and
/// the board.
final class SegmentWriter: BodySink, @unchecked Sendable {
    private let fd: Int32
    private let path: String
    private let log: SegmentLog
    private let board: SegmentBoard
    private let connection: Int
    private let slot: Int
    private let start: Int64
    private let chunkLimit: Int
    private let activity: ActivityClock
    /// Body bytes before the segment's position (an earlier range start), dropped.
    private var skip: Int64
    private(set) var position: Int64

    init(
        fd: Int32, path: String, log: SegmentLog, board: SegmentBoard, connection: Int, segment: SegmentPlan.Segment,
        skip: Int64, chunkLimit: Int, activity: ActivityClock
    ) {
        self.fd = fd
        self.path = path
        self.log = log
        self.board = board
        self.connection = connection
        self.slot = board.takeSlot()
        self.start = segment.position
        self.position = segment.position
        self.skip = skip
        self.chunkLimit = chunkLimit
        self.activity = activity
    }

    func consume(_ part: ByteBuffer) throws -> Bool {
        var index = Self.skipping(&skip, in: part.readableBytes)
        var end = board.withPlan { $0.end(of: connection) } ?? position
        while index < part.readableBytes {
            let room = end - position
            // The segment is done (or was split below this point): the rest of the body is another connection's.
            guard room > 0 else { return false }
            let count = Int(min(Int64(min(part.readableBytes - index, chunkLimit)), room))
            try part.withUnsafeReadableBytes { bytes in
                try FileIO.writeAll(
                    fd, path, UnsafeRawBufferPointer(rebasing: bytes[index..<index + count]), at: position)
            }
            position += Int64(count)
            index += count
            try log.write(slot: slot, start: start, position: position)
            // One lock a write buffer: record the progress and learn whether a split lowered the end meanwhile.
            end =
                board.withPlan { plan in
                    plan.advance(connection, to: position)
                    return plan.end(of: connection)
                } ?? position
            activity.advance(to: position)
        }
        return true
    }
}
