import NIOCore
import NIOHTTP1

/// The last handler of a ``ProxyConnection``'s channel, behind NIOHTTP1's request encoder and response decoder: sends
/// one request at a time and feeds its response to a ``ResponseBodyStream``, as AsyncHTTPClient's delegate callbacks
/// do for direct requests.
///
/// Every part goes to the stream in `channelRead`, on the event loop, so a part reaches the sink before the next one
/// is read. While the stream holds its ``ResponseBodyStream/highWater`` bytes before a drain, the handler holds back
/// the channel's reads (the `read` event is not passed on) until the stream took them: that is the backpressure.
///
/// When the response ended and both sides keep the connection alive (HTTP/1.1 without `Connection: close`), the
/// connection is handed back for the next request (`ended(true)`); anything else (an error, a cancel, a close
/// wanted) closes it.
final class ProxyExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private var context: ChannelHandlerContext?
    /// The response being received, if a request is under way.
    private var current: ResponseBodyStream?
    /// Told once how the current exchange ended: `true` when the connection can carry another request.
    private var ended: ((Bool) -> Void)?
    private var keepAlive = true
    private var cancelled = false
    /// Holds on reading not yet released: the stream holds its high-water mark of bytes, or a bandwidth limit
    /// holds the next read. A count, since every body part of one read may bring a hold of its own, and the first
    /// to end must not release the others (a limit's later holds are the longer ones).
    private var holds = 0
    private var readPending = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Sends `head` and feeds the response to `stream`; `ended` is told how the exchange ended.
    func start(_ head: HTTPRequestHead, into stream: ResponseBodyStream, ended: @escaping (Bool) -> Void) {
        guard let context, context.channel.isActive else {
            stream.finish(.failure(ResponseBodyStream.ConnectionClosed()))
            ended(false)
            return
        }
        current = stream
        self.ended = ended
        keepAlive = true
        cancelled = false
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
        sent.futureResult.assumeIsolated().whenFailure { error in
            self.fail(error)
        }
    }

    /// Cancels the exchange of `stream` if it is still under way: closes the connection, and the stream hears of
    /// the cancellation.
    func cancel(_ stream: ResponseBodyStream) {
        guard current === stream, let context else { return }
        cancelled = true
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let stream = current else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
            stream.receiveHead(head)
        case .body(let part):
            guard let held = stream.receive(part, on: context.eventLoop) else { return }
            holds += 1
            held.assumeIsolated().whenComplete { _ in
                self.holds -= 1
                if self.holds == 0, self.readPending {
                    self.readPending = false
                    self.context?.read()
                }
            }
        case .end:
            current = nil
            let ended = self.ended
            self.ended = nil
            // Back in the pool before the body's end is seen: the reader may ask for its next request at once, and a
            // connection released after that was not found idle, so the next request opened another (seen under
            // load: three sequential requests over two connections). A request that takes it now starts on this event
            // loop after this call returns.
            if keepAlive {
                ended?(true)
                stream.finish(.success(()))
            } else {
                stream.finish(.success(()))
                ended?(false)
                context.close(promise: nil)
            }
        }
    }

    func read(context: ChannelHandlerContext) {
        if holds > 0 {
            readPending = true
        } else {
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ResponseBodyStream.ConnectionClosed())
        context.fireChannelInactive()
    }

    /// Ends the current exchange with `error` (a cancellation when it was cancelled) and closes the connection.
    private func fail(_ error: any Error) {
        let stream = current
        let ended = self.ended
        current = nil
        self.ended = nil
        stream?.finish(.failure(cancelled ? CancellationError() : error))
        ended?(false)
        context?.close(promise: nil)
    }
}
