import CMicroHTTPD

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What stays the same for every request on one connection, worked out once when it opens (the peer's
/// address used to be formatted, `inet_ntop` and a new string, for every request), the buffer small file
/// bodies are read into, and the response last built on that buffer.
///
/// `@unchecked Sendable`: libmicrohttpd runs one connection's callbacks on one thread at a time, and only
/// those touch the buffer and the kept response.
final class ConnectionState: @unchecked Sendable {
    let id: Int
    let peerAddress: String
    let peerPort: Int
    private var buffer: UnsafeMutableRawPointer?
    private var bufferCapacity = 0
    /// The response last built on `buffer`, kept for the connection's next small file body (see
    /// `smallFileResponse`).
    private var kept: KeptResponse?

    /// A libmicrohttpd response this connection holds a reference to, and what it was built with. A class, so an
    /// update changes it in place instead of copying it out of the optional and back.
    private final class KeptResponse {
        let response: OpaquePointer
        /// The body length: the response sends this many bytes of `buffer`.
        let length: Int
        /// The header fields added, in order, after `Date`.
        var headers: [HeaderField]
        /// The second the `Date` value spells, and the value, NUL-terminated (the thread's `ResponseDate` buffer
        /// is rewritten when the second changes, and removing a field takes its value).
        var dateSecond: Int64
        var dateText: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        init(response: OpaquePointer, length: Int, headers: [HeaderField], dateSecond: Int64) {
            self.response = response
            self.length = length
            self.headers = headers
            self.dateSecond = dateSecond
        }
    }

    init(id: Int, peerAddress: String, peerPort: Int) {
        self.id = id
        self.peerAddress = peerAddress
        self.peerPort = peerPort
    }

    deinit {
        // The connection is closed, so libmicrohttpd has let go of the response; this is the last reference,
        // and the buffer it points into can go after it.
        if let kept { MHD_destroy_response(kept.response) }
        free(buffer)
    }

    /// The connection's body buffer, grown to at least `capacity` bytes (at most `smallBodyLimit`).
    private func bodyBuffer(capacity: Int) -> UnsafeMutableRawPointer {
        if let buffer, bufferCapacity >= capacity { return buffer }
        // The kept response points into the old buffer.
        dropKeptResponse()
        free(buffer)
        // Rounded up to a page so a connection reading ranges of varying size grows it only a few times.
        bufferCapacity = (capacity + 4095) & ~4095
        let grown = malloc(bufferCapacity)!
        buffer = grown
        return grown
    }

    private func dropKeptResponse() {
        if let kept { MHD_destroy_response(kept.response) }
        kept = nil
    }

    /// A response carrying `length` bytes of `file` from `offset`, with `Date` and `headers`, or nil when the bytes
    /// cannot be read or libmicrohttpd refuses the response.
    ///
    /// The bytes go into the connection's own body buffer, which libmicrohttpd sends without copying or freeing
    /// (`RESPMEM_PERSISTENT`): a connection has one response at a time, and it is sent before the next request on
    /// the connection is read, so the buffer is free again by the time it is reused. That saves a `malloc` and a
    /// `free` of the body per request.
    ///
    /// The response itself is kept for the next request on the connection: libmicrohttpd counts references to
    /// responses and lets go of its own once the exchange ends, so by the next request only the connection
    /// holds it. When the next body has the same length, only the fields from the first one that differs on
    /// (for a range of a file, `Content-Range`, the last) are removed and added again; `Date` comes first, so it
    /// and everything after it are replaced only when the second changes. Building a response costs an allocation
    /// and a lock, and each field added (about 900 instructions) an allocation for the field and copies of its
    /// name and value, and removing one about 500: re-adding six unchanged fields and recreating the response was
    /// most of what libmicrohttpd cost a small range request in our code.
    func smallFileResponse(
        file: OpenFile, offset: UInt64, length: Int, headers: [HeaderField]
    )
        -> OpaquePointer?
    {
        let buffer = bodyBuffer(capacity: length)
        guard file.read(offset: offset, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) else {
            return nil
        }
        let date = ResponseDate.now()
        if kept?.length == length, let response = updateKeptResponse(headers: headers, date: date) {
            return response
        }
        dropKeptResponse()
        guard let response = MHD_create_response_from_buffer(length, buffer, .RESPMEM_PERSISTENT) else { return nil }
        guard MHD_add_response_header(response, dateFieldName.cString, date.text) == .YES,
            withCStrings(headers[...], { MHD_add_response_header(response, $0, $1) == .YES })
        else {
            MHD_destroy_response(response)
            return nil
        }
        let entry = KeptResponse(response: response, length: length, headers: headers, dateSecond: date.second)
        copyDate(date.text, into: &entry.dateText)
        kept = entry
        return response
    }

    /// Brings the kept response's fields up to `headers` and `date`; nil when libmicrohttpd refused a change (the
    /// caller then builds a new response).
    private func updateKeptResponse(
        headers: [HeaderField], date: (second: Int64, text: UnsafePointer<CChar>)
    ) -> OpaquePointer? {
        guard let entry = kept else { return nil }
        let old = entry.headers
        var first = 0
        let common = min(old.count, headers.count)
        while first < common && old[first].hasSameBytes(as: headers[first]) { first += 1 }
        let dateChanged = entry.dateSecond != date.second
        if first == old.count && first == headers.count && !dateChanged { return entry.response }
        let response = entry.response
        if dateChanged {
            // `Date` was added first: it and every field after it come off and go back on in order, so the order on
            // the wire stays what building afresh gives.
            let removed = withUnsafeBytes(of: &entry.dateText) { bytes in
                MHD_del_response_header(
                    response, dateFieldName.cString, bytes.baseAddress!.assumingMemoryBound(to: CChar.self)) == .YES
            }
            guard removed else { return nil }
            first = 0
        }
        guard withCStrings(old[first...], { MHD_del_response_header(response, $0, $1) == .YES }),
            !dateChanged || MHD_add_response_header(response, dateFieldName.cString, date.text) == .YES,
            withCStrings(headers[first...], { MHD_add_response_header(response, $0, $1) == .YES })
        else {
            return nil
        }
        entry.headers = headers
        entry.dateSecond = date.second
        copyDate(date.text, into: &entry.dateText)
        return response
    }

    private func copyDate(
        _ text: UnsafePointer<CChar>, into storage: inout (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    ) {
        withUnsafeMutableBytes(of: &storage) { bytes in
            let length = min(strlen(text), bytes.count - 1)
            bytes.copyMemory(from: UnsafeRawBufferPointer(start: text, count: length))
            bytes[length] = 0
        }
    }

    /// The state libmicrohttpd keeps for `connection`, or nil (a connection that started before the
    /// callback was installed; there is none).
    static func of(_ connection: OpaquePointer) -> ConnectionState? {
        cmhd_connection_socket_context(connection).map {
            Unmanaged<ConnectionState>.fromOpaque($0).takeUnretainedValue()
        }
    }
}
