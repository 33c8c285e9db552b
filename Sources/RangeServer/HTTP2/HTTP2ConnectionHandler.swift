import NIOCore
import NIOHTTP2

/// The streams of one HTTP/2 connection: sits after `NIOHTTP2Handler` (used without a stream multiplexer, so it
/// passes on frames, not stream channels), keeps a table of ``HTTP2StreamHandler`` by stream, hands each stream its
/// frames and its close, and gives back the flow-control window the client's request bodies use.
///
/// Streams are not child channels because of what one cost: bench case 11 (4 KiB ranges, 4 connections × 16
/// streams) spent about 14 % of the server's CPU making, activating and closing a channel and pipeline per stream
/// and moving every frame through it (docs/benchmarks.md, "Case 11: where a request's CPU goes"); without them, and
/// with a stream's flushes during a read held to the read's end (`HTTP2ConnectionState.flush`), the CPU per request
/// fell from about 32 to 22 µs ("Case 11 with streams that are not channels"). A stream's writes go through this
/// handler's context, so they meet NIOHTTP2's state machine, flow control and frame encoding as before.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let shared: HTTP2StreamHandler.Shared
    private let connection: HTTP2ConnectionState
    private var streams: [HTTP2StreamID: HTTP2StreamHandler] = [:]

    init(shared: HTTP2StreamHandler.Shared, connection: HTTP2ConnectionState) {
        self.shared = shared
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        connection.inRead = true
        switch frame.payload {
        case .headers:
            if let stream = streams[frame.streamID] {
                stream.receive(frame.payload)
            } else if frame.streamID != .rootStream {
                // NIOHTTP2 passes on HEADERS of a new stream only when its state machine took them: a stream the
                // client opens.
                let stream = HTTP2StreamHandler(
                    shared: shared, connection: connection, streamID: frame.streamID, context: context)
                streams[frame.streamID] = stream
                stream.receive(frame.payload)
            }
        case .data(let body):
            returnWindow(of: body, on: frame.streamID, context: context)
            streams[frame.streamID]?.receive(frame.payload)
        case .rstStream:
            streams[frame.streamID]?.resetByPeer()
        default:
            // SETTINGS, PING, WINDOW_UPDATE, GOAWAY, PRIORITY: NIOHTTP2 has acted on them already.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        connection.inRead = false
        if connection.flushPending {
            connection.flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            streams.removeValue(forKey: closed.streamID)?.closed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            for stream in streams.values { stream.writabilityChanged() }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error has been answered by NIOHTTP2 (RST_STREAM, then the stream's close event); a connection
        // error with GOAWAY and a close. Neither needs more here.
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.inRead = false
        connection.flushPending = false
        let open = streams.values
        streams.removeAll()
        for stream in open { stream.closed() }
        context.fireChannelInactive()
    }

    /// Gives back the window a DATA frame used, on the connection and (while the client still sends on it) on its
    /// stream: a request body is taken in as it arrives, so the client's window stays as the SETTINGS opened it.
    private func returnWindow(
        of body: HTTP2Frame.FramePayload.Data, on streamID: HTTP2StreamID, context: ChannelHandlerContext
    ) {
        let length = body.data.readableBytes + (body.paddingBytes.map { $0 + 1 } ?? 0)
        guard length > 0 else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: length))),
            promise: nil)
        if !body.endStream, streams[streamID] != nil {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .windowUpdate(windowSizeIncrement: length))),
                promise: nil)
        }
        connection.flush(context)
    }
}
