import NIOCore

/// The application protocols a TLS ClientHello offers (its ALPN extension, RFC 7301 §3.1), read from the first bytes
/// a client sends: NIOSSL tells which protocol was chosen, not which were offered, and the journal shows both.
///
/// A pure reading of bytes: nil when they are not a whole ClientHello in one TLS record (a hello split over records
/// is legal and rare; the journal then shows no offer), or when the hello has no ALPN extension.
enum ClientHelloALPN {
    /// The protocols offered, in the client's order.
    static func offered(in bytes: some Collection<UInt8>) -> [String]? {
        var reader = Reader(Array(bytes))
        // The record: handshake (22), a version, the length.
        guard reader.byte() == 22, reader.skip(2), let recordLength = reader.integer(2) else { return nil }
        guard var record = reader.slice(recordLength) else { return nil }
        // The handshake message: ClientHello (1), a 24-bit length.
        guard record.byte() == 1, let helloLength = record.integer(3), var hello = record.slice(helloLength) else {
            return nil
        }
        // Version, random, session id, cipher suites, compression methods.
        guard hello.skip(2 + 32), let session = hello.integer(1), hello.skip(session),
            let suites = hello.integer(2), hello.skip(suites), let methods = hello.integer(1), hello.skip(methods),
            let extensionsLength = hello.integer(2), var extensions = hello.slice(extensionsLength)
        else { return nil }
        while !extensions.isAtEnd {
            guard let type = extensions.integer(2), let length = extensions.integer(2),
                var body = extensions.slice(length)
            else { return nil }
            // application_layer_protocol_negotiation (16): a 16-bit list length, then length-prefixed names.
            guard type == 16 else { continue }
            guard let listLength = body.integer(2), var list = body.slice(listLength) else { return nil }
            var names: [String] = []
            while !list.isAtEnd {
                guard let nameLength = list.integer(1), let name = list.slice(nameLength) else { return nil }
                names.append(String(decoding: name.remaining, as: UTF8.self))
            }
            return names.isEmpty ? nil : names
        }
        return nil
    }

    /// Reads big-endian integers and length-prefixed slices, failing (nil, false) past the end.
    private struct Reader {
        let bytes: [UInt8]
        var index: Int
        let end: Int

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            self.index = 0
            self.end = bytes.count
        }

        private init(bytes: [UInt8], index: Int, end: Int) {
            self.bytes = bytes
            self.index = index
            self.end = end
        }

        var isAtEnd: Bool { index >= end }
        var remaining: ArraySlice<UInt8> { bytes[index..<end] }

        mutating func byte() -> UInt8? {
            guard index < end else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func integer(_ width: Int) -> Int? {
            guard end - index >= width else { return nil }
            var value = 0
            for offset in 0..<width { value = value << 8 | Int(bytes[index + offset]) }
            index += width
            return value
        }

        mutating func skip(_ count: Int) -> Bool {
            guard end - index >= count else { return false }
            index += count
            return true
        }

        mutating func slice(_ count: Int) -> Reader? {
            guard end - index >= count else { return nil }
            defer { index += count }
            return Reader(bytes: bytes, index: index, end: index + count)
        }
    }
}

/// Reads the ALPN offer off a connection's first bytes and passes every byte on untouched, then leaves the
/// pipeline.
final class ClientHelloPeeker: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let connection: HTTP2ConnectionState

    init(connection: HTTP2ConnectionState) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        connection.alpnOffered = ClientHelloALPN.offered(in: buffer.readableBytesView)
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
