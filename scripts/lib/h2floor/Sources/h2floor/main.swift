// The least a server on rangeserver's HTTP/2 stack (SwiftNIO, NIOSSL, swift-nio-http2 without a stream
// multiplexer, as `HTTP2Listener` runs it) does to answer bench case 11's requests: one `pread` of the asked range
// from a file opened at start, the same eight response fields, HEADERS and one DATA frame, flushed once per read.
// No routing, planning, validation of the file, faults or journal. Case 11 runs it beside rangeserver and nginx, so
// the table shows which part of rangeserver's gap to nginx is the stack's own.
//
// Usage: h2floor --port PORT --certificate PEM --key PEM --root DIRECTORY
// Serves every regular file below DIRECTORY as /files/RELATIVE-PATH over HTTP/2 with TLS (ALPN h2 only).
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file opened once at start, with its validators formatted once.
struct ServedFile: Sendable {
    let descriptor: Int32
    let size: Int
    let entityTag: String
    let lastModified: String
}

/// Every regular file below `root` by request path, opened read-only.
func openFiles(below root: String) throws -> [String: ServedFile] {
    var files: [String: ServedFile] = [:]
    guard let walker = FileManager.default.enumerator(atPath: root) else {
        throw FloorError("cannot list \(root)")
    }
    while let relative = walker.nextObject() as? String {
        let path = root + "/" + relative
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { continue }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            continue
        }
        let seconds = Int(info.st_mtim.tv_sec)
        let tag =
            "\"\(String(info.st_size, radix: 16))-\(String(seconds, radix: 16))-\(String(info.st_ino, radix: 16))\""
        files["/files/" + relative] = ServedFile(
            descriptor: descriptor, size: Int(info.st_size), entityTag: tag, lastModified: httpDate(seconds))
    }
    return files
}

/// An IMF-fixdate.
func httpDate(_ seconds: Int) -> String {
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    var text = [CChar](repeating: 0, count: 64)
    let count = strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
    return String(decoding: text[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// `bytes=FIRST-LAST` of a file of `size` bytes, or nil (the whole file is sent).
func byteRange(_ field: String?, size: Int) -> ClosedRange<Int>? {
    guard let field, field.hasPrefix("bytes=") else { return nil }
    let bounds = field.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
    guard bounds.count == 2, let first = Int(bounds[0]), first < size else { return nil }
    let last = min(Int(bounds[1]) ?? (size - 1), size - 1)
    return first <= last ? first...last : nil
}

struct FloorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Answers each request's HEADERS at once; the answers to one read leave in one flush, as rangeserver's do.
final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let files: [String: ServedFile]
    private var dateSecond = -1
    private var dateText = ""

    init(files: [String: ServedFile]) {
        self.files = files
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard case .headers(let request) = frame.payload else { return }
        let path = request.headers.first(name: ":path") ?? ""
        guard let file = files[path] else {
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: "404")
            headers.add(name: "content-length", value: "0")
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: nil)
            return
        }
        let range = byteRange(request.headers.first(name: "range"), size: file.size)
        let span = range ?? 0...(file.size - 1)
        var body = context.channel.allocator.buffer(capacity: span.count)
        let read = body.writeWithUnsafeMutableBytes(minimumWritableBytes: span.count) { target in
            max(0, pread(file.descriptor, target.baseAddress, span.count, off_t(span.lowerBound)))
        }
        guard read == span.count else {
            context.close(promise: nil)
            return
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(8)
        headers.add(name: ":status", value: range == nil ? "200" : "206")
        headers.add(name: "date", value: currentDate())
        headers.add(name: "accept-ranges", value: "bytes")
        headers.add(name: "etag", value: file.entityTag, indexing: .nonIndexable)
        headers.add(name: "last-modified", value: file.lastModified, indexing: .nonIndexable)
        headers.add(name: "content-type", value: "application/octet-stream")
        if let range {
            headers.add(name: "content-range", value: "bytes \(range.lowerBound)-\(range.upperBound)/\(file.size)")
        }
        headers.add(name: "content-length", value: String(span.count))
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: headers)))),
            promise: nil)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: frame.streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
            promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func currentDate() -> String {
        let now = Int(time(nil))
        if now != dateSecond {
            dateSecond = now
            dateText = httpDate(now)
        }
        return dateText
    }
}

func option(_ name: String, in arguments: [String]) throws -> String {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else {
        throw FloorError("missing \(name) (usage: h2floor --port PORT --certificate PEM --key PEM --root DIRECTORY)")
    }
    return arguments[index + 1]
}

do {
    let arguments = CommandLine.arguments
    guard let port = Int(try option("--port", in: arguments)) else { throw FloorError("--port: not a number") }
    let chain = try NIOSSLCertificate.fromPEMFile(try option("--certificate", in: arguments))
    let key = try NIOSSLPrivateKey(file: try option("--key", in: arguments), format: .pem)
    let files = try openFiles(below: try option("--root", in: arguments))
    var tls = TLSConfiguration.makeServerConfiguration(
        certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    tls.applicationProtocols = ["h2"]
    let context = try NIOSSLContext(configuration: tls)
    // rangeserver's listener settings (`HTTP2Listener.configuration`), its bounds' defaults included.
    var connection = NIOHTTP2Handler.ConnectionConfiguration()
    connection.initialSettings = [
        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 16 * 1024),
        HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
    ]
    connection.headerBlockValidation = .disabled
    connection.contentLengthValidation = .disabled
    var stream = NIOHTTP2Handler.StreamConfiguration()
    stream.streamResetFrameRateLimit.maximumCount = 200
    stream.streamResetFrameRateLimit.windowLength = .seconds(30)
    let configuration = NIOHTTP2Handler.Configuration(connection: connection, stream: stream)
    let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .serverChannelOption(.backlog, value: 256)
        .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                try sync.addHandler(NIOSSLServerHandler(context: context))
                try sync.addHandler(
                    NIOHTTP2Handler(
                        mode: .server, connectionConfiguration: configuration.connection,
                        streamConfiguration: configuration.stream))
                try sync.addHandler(FloorHandler(files: files))
            }
        }
        .bind(host: "127.0.0.1", port: port).wait()
    print("h2floor listening on https://127.0.0.1:\(channel.localAddress?.port ?? port) (\(files.count) files)")
    fflush(nil)
    try channel.closeFuture.wait()
} catch {
    FileHandle.standardError.write(Data("h2floor: \(error)\n".utf8))
    exit(1)
}
