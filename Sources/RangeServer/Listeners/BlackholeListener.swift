#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP listener that never accepts, with its accept queue kept full, so a client's connect to it never
/// completes: an edge that is down without refusing connections (a dropped SYN, not a reset).
///
/// Linux drops a SYN that arrives while a listener's accept queue is full, so the client retransmits it until its
/// own connect timeout. The queue is made as short as the kernel allows (a backlog of 0 holds one connection) and
/// then filled by one connection of the listener's own, which nobody ever accepts. This is a few system calls on a
/// socket of its own, beside libmicrohttpd, since no library here offers a listener that must not accept.
final class BlackholeListener: Sendable {
    /// The bound port.
    let port: Int
    private let listener: Int32
    private let filler: Int32

    private let option: String

    /// Binds `host:port` (port 0 picks a free one) and fills the accept queue.
    ///
    /// - Parameters:
    ///   - host: a numeric address.
    ///   - port: the port; 0 picks a free one.
    ///   - option: what asked for the listener, for errors (`--blackhole-port`, `deadIPv6`).
    /// - Throws: ``RangeServerError`` naming the address when it cannot be bound.
    init(host: String, port: Int, option: String = "--blackhole-port") throws {
        self.option = option
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let address = found else {
            throw RangeServerError.invalidConfiguration("\(option): \(host) is not a numeric address")
        }
        defer { freeaddrinfo(found) }
        let family = address.pointee.ai_family
        let listener = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Self.failure("socket", host: host, port: port, option: option) }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(listener, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0, listen(listener, 0) == 0 else {
            let error = Self.failure("bind", host: host, port: port, option: option)
            close(listener)
            throw error
        }
        let bound = Self.boundPort(listener)
        // The filler connects to the listener's own address, or to loopback when it listens on every address.
        let unspecified = host == "0.0.0.0" || host == "::"
        let target = unspecified ? (family == AF_INET6 ? "::1" : "127.0.0.1") : host
        let filler = Self.connect(to: target, port: bound)
        guard filler >= 0 else {
            let error = Self.failure("fill the accept queue of", host: host, port: bound, option: option)
            close(listener)
            throw error
        }
        self.listener = listener
        self.filler = filler
        self.port = bound
    }

    deinit {
        close(filler)
        close(listener)
    }

    /// How many connection attempts the full accept queue has dropped since the listener opened (each SYN, its
    /// retransmissions included), from the listening socket's own drop counter (`SO_MEMINFO`); nil where the system
    /// keeps none (only Linux does).
    ///
    /// A count, where watching the socket table for a client's half-open connect can miss it: that connect lives
    /// only until the client gives up on the address, a few hundred milliseconds for a Happy Eyeballs client.
    var droppedConnects: Int? {
        #if os(Linux)
        // SK_MEMINFO_VARS words; the kernel's tcp_listendrop counts a SYN refused by a full queue in SK_MEMINFO_DROPS.
        var words = [UInt32](repeating: 0, count: 9)
        var length = socklen_t(words.count * MemoryLayout<UInt32>.size)
        let done = words.withUnsafeMutableBytes {
            getsockopt(listener, SOL_SOCKET, SO_MEMINFO, $0.baseAddress, &length)
        }
        guard done == 0, length >= socklen_t(words.count * MemoryLayout<UInt32>.size) else { return nil }
        return Int(words[8])
        #else
        return nil
        #endif
    }

    private static func failure(_ step: String, host: String, port: Int, option: String) -> RangeServerError {
        let reason = String(cString: strerror(errno))
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return .invalidConfiguration("\(option): cannot \(step) \(address): \(reason)")
    }

    private static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: storage) { bytes in
            family == AF_INET6
                ? Int(UInt16(bigEndian: bytes.load(as: sockaddr_in6.self).sin6_port))
                : Int(UInt16(bigEndian: bytes.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// A blocking connect to `host:port`; on loopback the kernel completes the handshake at once, accepted or not.
    private static func connect(to host: String, port: Int) -> Int32 {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let address = found else { return -1 }
        defer { freeaddrinfo(found) }
        let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        #if canImport(Glibc)
        let connected = Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen)
        #else
        let connected = Darwin.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen)
        #endif
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }
}
