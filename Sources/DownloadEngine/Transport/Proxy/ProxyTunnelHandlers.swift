import NIOCore
import NIOHTTP1
import NIOSSL
import NIOTLS

/// Sends a `CONNECT` when added and reports the proxy's response head, the only part it reads: whatever the status,
/// the caller decides what comes next (the tunnel, or a refusal and a close).
///
/// NIOHTTP1's response decoder, which saw the `CONNECT` go out, knows that a `2xx` to it has no body.
final class ProxyConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let head: HTTPRequestHead
    private let answered: EventLoopPromise<HTTPResponseHead>

    init(head: HTTPRequestHead, answered: EventLoopPromise<HTTPResponseHead>) {
        self.head = head
        self.answered = answered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenFailure { error in
            self.answered.fail(error)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        answered.fail(ResponseBodyStream.ConnectionClosed())
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { answered.succeed(head) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answered.fail(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answered.fail(ResponseBodyStream.ConnectionClosed())
        context.fireChannelInactive()
    }
}

/// Reports the end of the TLS handshake inside a tunnel: NIOSSL's completion event, or the error that ended it.
///
/// Where the origin is an IP address, NIOSSL cannot check the certificate's name: without a server name it checks
/// the channel's peer address, which in a tunnel is the proxy's. The tunnel then turns NIOSSL's name check off
/// (``ProxyTLS``) and this handler checks that the certificate names the origin's address (`expectedAddress`).
final class ProxyHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let done: EventLoopPromise<Void>
    private let expectedAddress: [UInt8]?
    private let origin: String

    init(done: EventLoopPromise<Void>, expectedAddress: [UInt8]?, origin: String) {
        self.done = done
        self.expectedAddress = expectedAddress
        self.origin = origin
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if let expectedAddress {
            let certificate = try? context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
                .peerCertificate
            guard let certificate, ProxyTLS.names(address: expectedAddress, certificate) else {
                done.fail(DownloadError.tlsCertificate(origin, "it is not for this host name"))
                return
            }
        }
        done.succeed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        done.fail(ResponseBodyStream.ConnectionClosed())
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.fail(ResponseBodyStream.ConnectionClosed())
        context.fireChannelInactive()
    }
}
