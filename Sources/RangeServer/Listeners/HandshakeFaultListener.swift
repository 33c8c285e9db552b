import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A listener for the TLS faults that strike before any request: `handshake-fail` answers the ClientHello with a
/// fatal alert and closes, `handshake-stall` accepts and never answers.
///
/// libmicrohttpd runs the TLS handshake itself and offers no hook to spoil it, so these are small SwiftNIO listeners
/// of their own beside it, on NIO's shared event loop group. They speak no TLS: a fatal alert is seven bytes, and a
/// stall is the absence of bytes.
final class HandshakeFaultListener: Sendable {
    /// The bound port.
    let port: Int
    private let channel: any Channel
    private let connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>

    /// Binds `host:port` (0 picks a free port) for `fault`, which must be `.handshakeFail` or `.handshakeStall`.
    ///
    /// - Throws: ``RangeServerError`` naming the address when it cannot be bound.
    init(fault: TLSFault, host: String, port: Int) throws {
        let connections = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
        let failsHandshake = fault == .handshakeFail
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        HandshakeFaultHandler(failsHandshake: failsHandshake, connections: connections))
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw RangeServerError.bindFailed("tls-fault \(fault.rawValue): cannot listen on \(address): \(error)")
        }
        self.port = channel.localAddress?.port ?? 0
        self.connections = connections
    }

    /// Closes the listener and every connection it holds (a stalled handshake included).
    func stop() {
        channel.close(promise: nil)
        let open = connections.withLockedValue { table in
            defer { table.removeAll() }
            return Array(table.values)
        }
        for connection in open { connection.close(promise: nil) }
    }

    deinit { stop() }
}

/// Handles one connection of a `HandshakeFaultListener`.
private final class HandshakeFaultHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A TLS alert record (RFC 8446 §6): content type 21, legacy version 3.3, length 2, level fatal (2),
    /// description `handshake_failure` (40).
    static let fatalHandshakeFailure: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]

    private let failsHandshake: Bool
    private let connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>

    init(failsHandshake: Bool, connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>) {
        self.failsHandshake = failsHandshake
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { $0[ObjectIdentifier(channel)] = channel }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // What the client sent (its ClientHello) is read and dropped either way.
        guard failsHandshake else { return }
        let alert = context.channel.allocator.buffer(bytes: Self.fatalHandshakeFailure)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(alert)).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
