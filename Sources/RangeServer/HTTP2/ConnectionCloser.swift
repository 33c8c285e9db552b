import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ends an HTTP/2 connection for a fault from below NIOHTTP2, so the end is the fault's alone: closing the channel
/// through NIOHTTP2 first resets every open stream (RST_STREAM CANCEL), frames a drop or a GOAWAY must not bring.
///
/// It sits right under the HTTP/2 handler (over TLS, above NIOSSL, which still sends close_notify on a close); a
/// close it starts travels towards the socket only.
final class ConnectionCloser: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// A close in order: FIN (over TLS close_notify first), then what the client still sends is read and dropped
    /// until it closes too, or `lingering` passes.
    ///
    /// An HTTP/2 client keeps sending (WINDOW_UPDATE, PING, SETTINGS acknowledgements); a socket closed with such
    /// bytes unread answers them with an RST, and the client's kernel then discards body bytes its reader had not
    /// taken yet: a drop would look like a reset, with fewer bytes than the fault's point.
    func closeGently() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.close(mode: .output, promise: promise)
        let loop = context.eventLoop
        let channel = context.channel
        promise.futureResult.whenComplete { result in
            if case .failure = result {
                channel.close(promise: nil)
                return
            }
            loop.scheduleTask(in: Self.lingering) { channel.close(promise: nil) }
        }
        return promise.futureResult
    }

    /// A TCP reset: SO_LINGER with a zero timeout, then a close.
    func abort() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.close(promise: promise)
        return promise.futureResult
    }

    /// How long a connection closed in order keeps reading before it closes whatever the client does.
    ///
    /// Long enough for a slow reader: a client still taking the body when the socket closed answers with its next
    /// WINDOW_UPDATE, draws the RST, and loses what its kernel held. With 2 s, the engine under ThreadSanitizer on a
    /// loaded machine lost 44K that way (`h2-goaway-close`, judged as fetched twice). A client that reads to the end
    /// closes at once, which ends the wait.
    static let lingering: TimeAmount = .seconds(30)
}
