import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Answers a connection on the HTTP/2 TLS port whose client chose `http/1.1` in ALPN (or none): 421 with one line
/// naming the port to use, journaled like any exchange, then a close.
///
/// RFC 9110 §15.5.20: 421 says this server will not answer the request on this connection; the client may retry it
/// on another, here the `--tls-port` listener.
final class MisdirectedHTTP1Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let shared: HTTP2StreamHandler.Shared
    private let connection: HTTP2ConnectionState
    private var head: HTTPRequestHead?
    private var arrival = 0
    private var arrivalTime: Int64 = 0
    private let startedAt = ContinuousClock.now

    init(shared: HTTP2StreamHandler.Shared, connection: HTTP2ConnectionState) {
        self.shared = shared
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard self.head == nil else { return }
            self.head = head
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            arrivalTime = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
            arrival = shared.counters.arrivals.wrappingAdd(1, ordering: .relaxed).newValue
        case .body:
            break
        case .end:
            guard let head else { return }
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let chosen = connection.alpn ?? "no protocol"
        var plan = ResponsePlan.text(
            421,
            "misdirected request: this port speaks HTTP/2 only, and ALPN chose \(chosen); use the --tls-port listener")
        // A scenario request is journaled under its run (no attempt counted), so its run's reader sees the 421.
        plan.scenario = shared.pipeline.router.scenarioContext(naming: head.uri)
        var headers = HTTPHeaders()
        headers.add(name: "Date", value: String(cString: ResponseDate.current()))
        for field in plan.headers { headers.add(name: field.name, value: field.value) }
        headers.add(name: "Content-Length", value: String(plan.body.length))
        headers.add(name: "Connection", value: "close")
        let status = HTTPResponseStatus(statusCode: 421)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if case .literal(let bytes) = plan.body {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
        }
        let request = IncomingRequest(
            method: head.method.rawValue, target: head.uri,
            httpVersion: "HTTP/\(head.version.major).\(head.version.minor)",
            headers: head.headers.map { HeaderField($0.name, $0.value) }, peerAddress: connection.peerAddress,
            peerPort: connection.peerPort, connectionID: connection.id, arrival: arrival, arrivalTime: arrivalTime,
            isTLS: connection.isTLS, alpn: connection.alpn, alpnOffered: connection.alpnOffered)
        let pipeline = shared.pipeline
        let startedAt = startedAt
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { result in
            let outcome: JournalOutcome = (try? result.get()) != nil ? .complete : .clientClosed
            pipeline.complete(
                CompletedExchange(
                    request: request, plan: plan, bodyBytesSent: outcome == .complete ? plan.body.length : 0,
                    outcome: outcome, startedAt: startedAt))
            channel.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
