import Foundation
import SystemCalls

/// Counts established TCP connections to a local address and port by reading `/proc/net/tcp` and `/proc/net/tcp6`
/// (Linux); elsewhere it reports nothing and the judge relies on the journal alone.
enum ConnectionSampler {
    /// The established connections whose local end is `host`:`port` (any address of `port` when `host` is nil or
    /// not a specific numeric address), or nil when no table can be read.
    ///
    /// The address matters: a `dead-ipv6` row's blackhole listens on `[::1]` at the server's own port, and the
    /// harness keeps its accept queue full with a connection of its own, which sits established there for the
    /// whole run. Counted by port alone, that connection was one more of every client's, and every pair's wait for
    /// a quiet port waited its whole limit for it.
    ///
    /// A connection is counted once however often a read lists it. The kernel hands the table out a page per read
    /// and finds its place again by position, so a read while other sockets open and close can list a line twice
    /// (or miss one): ClientWorldTests read a port holding one connection, still in the accept queue, as holding
    /// three, with the suite's other servers starting and stopping beside it. Two sockets never share both ends,
    /// so the pair of addresses names one.
    ///
    /// - Parameters:
    ///   - host: the local address.
    ///   - port: the local port.
    ///   - tables: the directory holding the `tcp` and `tcp6` tables (tests give one of their own).
    /// - Returns: the count, or nil when no table can be read.
    static func established(toLocal host: String? = nil, port: Int, tables: String = "/proc/net") -> Int? {
        var seen: Set<Substring> = []
        var readAny = false
        let portSuffix = ":" + String(format: "%04X", port)
        let address = host.flatMap(tableAddress)
        for table in ["tcp", "tcp6"] {
            if let address, address.table != table { continue }
            guard let data = contents(ofTable: tables + "/" + table) else { continue }
            readAny = true
            let wanted = address.map { $0.hex + portSuffix }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3, fields[3] == "01" else { continue }
                let matches = wanted.map { fields[1] == $0 } ?? fields[1].hasSuffix(portSuffix)
                if matches { seen.insert(line[fields[1].startIndex..<fields[2].endIndex]) }
            }
        }
        return readAny ? seen.count : nil
    }

    /// Which table (`tcp` or `tcp6`) lists sockets on the numeric address `host`, and how it prints the address:
    /// IPv4 as one 32-bit word, IPv6 as four, each word in the host's byte order. Nil for a name, or an unspecified
    /// address (`0.0.0.0`, `::`), whose accepted sockets show the address they were reached on instead.
    static func tableAddress(_ host: String) -> (table: String, hex: String)? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            guard v4.s_addr != 0 else { return nil }
            return ("tcp", String(format: "%08X", v4.s_addr))
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
        let words = withUnsafeBytes(of: v6) { bytes in
            (0..<4).map { bytes.load(fromByteOffset: $0 * 4, as: UInt32.self) }
        }
        guard words.contains(where: { $0 != 0 }) else { return nil }
        return ("tcp6", words.map { String(format: "%08X", $0) }.joined())
    }

    /// Waits until no connection to the local `host`:`port` is established, at most `limit`, and returns how many still
    /// are (0 when the table cannot be read).
    ///
    /// A pair starts on a quiet port: the connections the last pair left may still be open for a moment after it
    /// ended (AsyncHTTPClient's shutdown completes before the closes it asked for have run, so an in-process
    /// client's sockets outlive its shutdown on a busy event loop), and counted as this pair's they would charge
    /// its client with connections it never opened.
    ///
    /// - Parameters:
    ///   - host: the local address (see `established(toLocal:port:)`).
    ///   - port: the local port.
    ///   - limit: how long to wait.
    /// - Returns: the connections still established when the wait ended.
    static func awaitQuiet(localHost host: String? = nil, port: Int, within limit: Duration) async -> Int {
        let deadline = ContinuousClock.now + limit
        var quietReads = 0
        while true {
            let open = established(toLocal: host, port: port) ?? 0
            quietReads = open == 0 ? quietReads + 1 : 0
            // Quiet when two reads in a row say so: a read can miss a line (see `established`), and a port read as
            // quiet so would end the wait with a connection still open. A read costs about 6 ms of kernel time here
            // (the walk of 262,144 hash buckets), so the watch's own samples stay single reads.
            if quietReads == 2 || ContinuousClock.now >= deadline { return open }
            // The second read of a quiet port follows at once: it only has to be a read of its own.
            if quietReads == 0 { try? await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// The whole text of a socket table, or nil when it cannot be read.
    ///
    /// Read to its end by hand: `FileManager.contents(atPath:)` trusts the size `stat` gives, and a procfs file's
    /// is 0, so it returned one read of one page (about 27 of `/proc/net/tcp`'s lines) and the sampler missed
    /// every socket listed after them.
    ///
    /// - Parameter path: the table.
    /// - Returns: its bytes.
    static func contents(ofTable path: String) -> [UInt8]? {
        // The package's one EINTR-retrying wrapper (SystemCalls) carries both calls.
        guard let descriptor = try? systemCall("open", { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let filled = try? systemCall("read") {
                buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            }
            guard let count = filled else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// `::1` as `/proc/net/tcp6` prints it: four 32-bit words, each in the host's byte order (little-endian here).
    static let ipv6LoopbackHex = "00000000000000000000000001000000"

    /// The sockets (by inode) connecting to `[::1]:port` that have sent a SYN and have no answer (`SYN_SENT`), read
    /// from `/proc/net/tcp6`: a client trying the dead IPv6 address of a `dead-ipv6` row, whose SYNs the blackhole
    /// listener's full accept queue drops. Nil when the table cannot be read.
    ///
    /// A connect to a dead address stays in `SYN_SENT` until the client gives it up (at its connect timeout, or once
    /// its IPv4 attempt wins a race: RFC 8305 starts IPv4 250 ms after IPv6 at the soonest), so the runner's
    /// 10 ms sampling sees every attempt.
    ///
    /// - Parameters:
    ///   - port: the remote port.
    ///   - table: the table to read.
    /// - Returns: the inodes, or nil.
    static func pendingConnects(toIPv6LoopbackPort port: Int, table: String = "/proc/net/tcp6") -> Set<String>? {
        guard let data = contents(ofTable: table) else { return nil }
        let remote = ipv6LoopbackHex + ":" + String(format: "%04X", port)
        var inodes: Set<String> = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count > 9, fields[2] == remote, fields[3] == "02" { inodes.insert(String(fields[9])) }
        }
        return inodes
    }
}
