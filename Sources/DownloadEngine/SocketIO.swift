#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket calls of ``SocketTransport``, all blocking except the connect: EINTR is retried and errno becomes a
/// ``DownloadError/network(_:)`` naming the call and the peer, as ``FileIO`` does for files.
enum SocketIO {
    /// Why a call failed, before it becomes a ``DownloadError``: the transport needs the errno to tell a stale
    /// kept-alive connection (reset, broken pipe) from other failures.
    struct Failure: Error {
        var call: String
        var peer: String
        var code: Int32

        var error: DownloadError {
            .network("\(call) \(peer): \(String(cString: strerror(code)))")
        }

        /// The peer closed or reset the connection: on a reused connection before any response byte, the request
        /// is sent again on a new one.
        var isConnectionLoss: Bool { code == ECONNRESET || code == EPIPE || code == ECONNABORTED }
    }

    @discardableResult
    private static func call<T: FixedWidthInteger>(
        _ name: String, _ peer: String, _ body: () -> T
    ) throws(Failure)
        -> T
    {
        while true {
            let result = body()
            if result == -1 {
                let code = errno
                if code == EINTR { continue }
                throw Failure(call: name, peer: peer, code: code)
            }
            return result
        }
    }

    /// Opens a TCP connection to `host:port`, trying each address in turn, within `timeout` overall.
    ///
    /// The connect is non-blocking with `poll`, in slices of at most 100 ms so that `isCancelled` is noticed
    /// (`shutdown` does not wake a connecting socket); the returned descriptor is blocking again, close-on-exec,
    /// with `TCP_NODELAY` (a request is one write, and must not wait for an acknowledgement).
    ///
    /// - Returns: The connected descriptor.
    /// - Throws: ``DownloadError/connectTimeout(_:)``, ``DownloadError/network(_:)``, or `CancellationError`.
    static func connect(
        host: String, port: Int, timeout: Duration, url: String, isCancelled: () -> Bool
    ) throws -> Int32 {
        let peer = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // No AI_ADDRCONFIG: it hides `::1` on a machine whose only IPv6 address is the loopback one.
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw DownloadError.network("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let deadline = ContinuousClock.now + timeout
        var lastError: (any Error)?
        var address: UnsafeMutablePointer<addrinfo>? = list
        while let current = address {
            address = current.pointee.ai_next
            do {
                return try connect(current.pointee, peer: peer, deadline: deadline, isCancelled: isCancelled)
            } catch let failure as Failure {
                lastError = failure.error
            } catch {
                // A timeout or a cancellation ends the attempt: the deadline covers every address.
                if error is CancellationError || ContinuousClock.now >= deadline {
                    throw error is CancellationError ? error : DownloadError.connectTimeout(url)
                }
                lastError = error
            }
        }
        throw lastError ?? DownloadError.network("no address for \(host)")
    }

    private struct TimedOut: Error {}

    private static func connect(
        _ info: addrinfo, peer: String, deadline: ContinuousClock.Instant, isCancelled: () -> Bool
    ) throws -> Int32 {
        let fd = try call("socket", peer) {
            socket(info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            let flags = try call("fcntl", peer) { fcntl(fd, F_GETFL) }
            try call("fcntl", peer) { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
            if Glibc_connect(fd, info.ai_addr, info.ai_addrlen) != 0 {
                let code = errno
                guard code == EINPROGRESS || code == EINTR else {
                    throw Failure(call: "connect", peer: peer, code: code)
                }
                try waitConnected(fd, peer: peer, deadline: deadline, isCancelled: isCancelled)
            }
            try call("fcntl", peer) { fcntl(fd, F_SETFL, flags) }
            var one: Int32 = 1
            try call("setsockopt", peer) {
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    private static func waitConnected(
        _ fd: Int32, peer: String, deadline: ContinuousClock.Instant, isCancelled: () -> Bool
    ) throws {
        while true {
            if isCancelled() { throw CancellationError() }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw TimedOut() }
            let milliseconds = Int32(min(100, max(1, left.seconds * 1000)))
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready == -1, errno != EINTR { throw Failure(call: "poll", peer: peer, code: errno) }
            if ready > 0 { break }
        }
        var code: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        try call("getsockopt", peer) { getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size) }
        if code != 0 { throw Failure(call: "connect", peer: peer, code: code) }
    }

    /// Sends all of `bytes`; `MSG_NOSIGNAL`, so a closed peer is an error, not a `SIGPIPE`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, peer: String) throws(Failure) {
        var done = 0
        while done < bytes.count {
            done += try call("send to", peer) {
                Glibc_send(fd, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL))
            }
        }
    }

    /// Reads what is there (blocking until something is); 0 at the end of the connection.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, peer: String) throws(Failure) -> Int {
        try call("recv from", peer) { recv(fd, buffer.baseAddress!, buffer.count, 0) }
    }

    /// Whether a kept-alive connection is still usable: nothing to read and not closed by the peer. A server that
    /// closed an idle connection has made it readable (end of file); reading it would lose the next request.
    static func isIdleAndOpen(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Wakes a thread blocked in `recv` or `send` on `fd` (they return 0 or fail), from any thread.
    static func shutdown(_ fd: Int32) { _ = Glibc_shutdown(fd, Int32(SHUT_RDWR)) }

    static func close(_ fd: Int32) { _ = Glibc_close(fd) }
}

// Unambiguous names for the C functions that the enum's own members shadow.
private func Glibc_connect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
private func Glibc_send(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}
private func Glibc_shutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }
private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }
