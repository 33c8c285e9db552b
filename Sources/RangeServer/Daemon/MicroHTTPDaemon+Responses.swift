import CMicroHTTPD

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Queues the response to the plan in `context`.
func queue(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> MHD_Result {
    context.phase = .queued
    let status = UInt32(context.plan!.status)
    if case .content(.file(let file), let offset, let length) = context.plan!.body, length > 0,
        length <= smallBodyLimit, context.plan!.delivery.isPlain, context.request?.method != "HEAD",
        let state = ConnectionState.of(connection)
    {
        // The connection keeps this response for its next request; libmicrohttpd holds its own reference meanwhile.
        guard
            let response = state.smallFileResponse(
                file: file, offset: offset, length: Int(length), headers: context.plan!.headers)
        else { return .NO }
        return MHD_queue_response(connection, status, response)
    }
    guard let response = makeResponse(context: context, connection: connection, daemon: daemon) else {
        return .NO
    }
    defer { MHD_destroy_response(response) }
    let delivery = context.plan!.delivery
    // Before any field: the flags decide which fields libmicrohttpd adds itself.
    if delivery.lengthDelta != nil {
        _ = cmhd_allow_manual_content_length_and_close(response)
    } else if delivery.chunkedWithLength && context.request?.method != "HEAD" {
        _ = cmhd_allow_manual_content_length(response)
    }
    // Ours, formatted once a second, so libmicrohttpd adds none of its own (see `ResponseDate`); first, as on a
    // kept response.
    // A response that closes the connection gets a Date of libmicrohttpd's own whatever it holds (its
    // HTTP/1.0-compatible mode for `length-delta`, and `Connection: close` for `garbage-after` too: seen on the wire
    // as two Date fields), so there ours would make two.
    if !delivery.closesConnection {
        _ = MHD_add_response_header(response, dateFieldName.cString, ResponseDate.current())
    }
    _ = withCStrings(context.plan!.headers[...]) { name, value in
        _ = MHD_add_response_header(response, name, value)
        return true
    }
    if let delta = delivery.lengthDelta {
        // The body is still exactly the one planned (see `makeResponse`); only the declared length lies.
        _ = MHD_add_response_header(
            response, "Content-Length", String(max(0, Int64(clamping: context.plan!.body.length) + delta)))
    } else if delivery.chunkedWithLength && context.request?.method != "HEAD" {
        _ = MHD_add_response_header(response, "Content-Length", String(context.plan!.body.length))
    }
    if delivery.closesConnection { _ = MHD_add_response_header(response, "Connection", "close") }
    return MHD_queue_response(connection, status, response)
}

extension HeaderField {
    /// Whether `other` has the same name and value, byte for byte (see `String.hasSameUTF8(as:)`): equal-looking
    /// fields with other bytes must not leave the old bytes on the wire.
    func hasSameBytes(as other: HeaderField) -> Bool {
        name.hasSameUTF8(as: other.name) && value.hasSameUTF8(as: other.value)
    }
}

/// `Date`, NUL-terminated in the binary: a `String` argument would be copied to the heap for the call.
let dateFieldName: StaticString = "Date"

extension StaticString {
    /// The literal's bytes as a C string; the literal is NUL-terminated in the binary.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// Calls `body` with each field's name and value as NUL-terminated copies in one stack buffer, in order, until it
/// returns false; returns whether every call returned true.
///
/// Passing a `String` where C wants a `char *` allocates a C copy of every small (up to 15 bytes) string, and
/// most names and values here are small: that was ten allocations per response.
func withCStrings(
    _ headers: ArraySlice<HeaderField>,
    _ body: (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Bool
) -> Bool {
    var size = 0
    for header in headers { size += header.name.utf8.count + header.value.utf8.count + 2 }
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer in
        var offset = 0
        func copy(_ text: String) -> UnsafePointer<CChar> {
            let start = buffer.baseAddress! + offset
            let copied = text.utf8.withContiguousStorageIfAvailable { bytes in
                if let source = bytes.baseAddress {
                    UnsafeMutableRawPointer(start).copyMemory(from: source, byteCount: bytes.count)
                }
                return bytes.count
            }
            if let copied {
                offset += copied
            } else {
                for byte in text.utf8 {
                    buffer[offset] = CChar(bitPattern: byte)
                    offset += 1
                }
            }
            buffer[offset] = 0
            offset += 1
            return UnsafePointer(start)
        }
        for header in headers {
            let name = copy(header.name)
            let value = copy(header.value)
            guard body(name, value) else { return false }
        }
        return true
    }
}

func makeResponse(context: RequestContext, connection: OpaquePointer, daemon: MicroHTTPDaemon) -> OpaquePointer? {
    let isHead = context.request?.method == "HEAD"
    let delivery = context.plan!.delivery
    switch context.plan!.body {
    case .empty:
        return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .literal(let bytes) where delivery.isPlain || isHead:
        return bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .content(.file(let file), let offset, let length) where delivery.isPlain && !isHead && !daemon.isTLS:
        // Under TLS there is no sendfile: libmicrohttpd preads a file response in pieces the size of the free write
        // buffer (about 12 KiB) and goes back to epoll after each, where the reader below fills 1 MiB blocks
        // (scripts/bench case 8: 1 GiB over TLS went from about 0.55 to 0.77 GB/s, with 85,000 fewer system calls
        // of each kind per GiB).
        if length == 0 { return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT) }
        // Small bodies do not get here: `queue` reads them into the connection's buffer. libmicrohttpd owns and
        // closes the duplicate and sends it with sendfile. Sharing the description is safe: libmicrohttpd passes
        // explicit offsets to sendfile and pread and never moves the file offset.
        let fd = fcntl(file.descriptor, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { return nil }
        return MHD_create_response_from_fd_at_offset64(length, fd, offset)
    default:
        let plan = context.plan!
        let reader = BodyReader(plan: plan, context: context, connection: connection, daemon: daemon)
        // `length-delta` and `chunked-with-length` declare a length of their own: libmicrohttpd, not told the size,
        // adds none; it chunks the body unless the response's flags say otherwise (see `queue`).
        let size = plan.delivery.leavesSizeUnknown(forHEAD: isHead) ? cmhd_size_unknown() : plan.body.length
        return MHD_create_response_from_callback(
            size, readerBlockSize(plan), readBody, Unmanaged.passRetained(reader).toOpaque(), freeBody
        )
    }
}

/// The content reader's block: what one reader call may produce and one send may carry.
///
/// Unfaulted bodies get up to 1 MiB: every block costs a reader call, a send and an event-loop pass, and at
/// 64 KiB those made a generated body cost three times a sendfile one in CPU per byte. libmicrohttpd allocates
/// the block with the response, so it never exceeds the body. Paced and faulted bodies keep 64 KiB: pacing
/// and the fault points cut blocks short anyway, and `bodyBytesSent` for a client that leaves mid-body is
/// counted in blocks, so it stays as fine as it was.
func readerBlockSize(_ plan: ResponsePlan) -> Int {
    guard plan.delivery.isPlain else { return 64 * 1024 }
    return Int(clamping: max(4 * 1024, min(plan.body.length, 1024 * 1024)))
}

/// File bodies up to this size are read into the response at once: one pread, and libmicrohttpd sends the
/// header and body in one write, where sendfile costs a duplicate descriptor and separate header and body
/// writes.
let smallBodyLimit: UInt64 = 64 * 1024
