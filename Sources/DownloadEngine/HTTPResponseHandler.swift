import NIOCore
import NIOHTTP1

/// The last handler of a connection's pipeline: hands each decoded response part, the end of each read and the
/// connection's failure to the ``HTTPExchange`` currently on the connection.
///
/// A part arriving with no exchange on the connection was never asked for: the connection is out of step and
/// closed. Used on the channel's event loop only, which is why it is `@unchecked Sendable`.
final class HTTPResponseHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    /// The request in flight on this connection; `nil` while the connection is idle.
    var exchange: HTTPExchange?
    private let peer: String

    init(peer: String) { self.peer = peer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if let exchange {
            exchange.received(part)
        } else {
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        exchange?.readComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        exchange?.failed(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        exchange?.failed(DownloadError.network("connection to \(peer) closed"))
        context.fireChannelInactive()
    }
}
