import Foundation

/// Counts established TCP connections to a local port by reading `/proc/net/tcp` and `/proc/net/tcp6`
/// (Linux); elsewhere it reports nothing and the judge relies on the journal alone.
enum ConnectionSampler {
    static func established(toLocalPort port: Int) -> Int? {
        var count = 0
        var readAny = false
        let suffix = ":" + String(format: "%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let data = contents(ofTable: table) else { continue }
            readAny = true
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "01" { count += 1 }
            }
        }
        return readAny ? count : nil
    }

    /// Waits until no connection to the local `port` is established, at most `limit`, and returns how many still
    /// are (0 when the table cannot be read).
    ///
    /// A pair starts on a quiet port: the connections the last pair left may still be open for a moment after it
    /// ended (AsyncHTTPClient's shutdown completes before the closes it asked for have run, so an in-process
    /// client's sockets outlive its shutdown on a busy event loop), and counted as this pair's they would charge
    /// its client with connections it never opened.
    ///
    /// - Parameters:
    ///   - port: the local port.
    ///   - limit: how long to wait.
    /// - Returns: the connections still established when the wait ended.
    static func awaitQuiet(localPort port: Int, within limit: Duration) async -> Int {
        let deadline = ContinuousClock.now + limit
        while true {
            let open = established(toLocalPort: port) ?? 0
            if open == 0 || ContinuousClock.now >= deadline { return open }
            try? await Task.sleep(for: .milliseconds(10))
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
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? bytes : nil }
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
