import NIOCore

/// Notes when each read from a connection's socket returned, first in its pipeline (before TLS): a frame handled
/// later carries bytes read by then, so the requests of one read share one moment (`IncomingRequest.readBy`), and
/// the file cache's change watch reads its queue once for them all instead of once each.
///
/// Taken here and not where the frames arrive: NIOHTTP2 hands on the frames of a cleartext read before the next read
/// of the same batch, so the time of a batch's first frame can be earlier than the read that brought a later one.
final class SocketReadClock: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    private let connection: HTTP2ConnectionState

    init(connection: HTTP2ConnectionState) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection.socketReadAt = .now
        context.fireChannelRead(data)
    }
}
