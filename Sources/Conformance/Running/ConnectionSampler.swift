import Foundation

/// Counts established TCP connections to a local port by reading `/proc/net/tcp` and `/proc/net/tcp6`
/// (Linux); elsewhere it reports nothing and the judge relies on the journal alone.
enum ConnectionSampler {
    static func established(toLocalPort port: Int) -> Int? {
        var count = 0
        var readAny = false
        let suffix = ":" + String(format: "%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let data = FileManager.default.contents(atPath: table) else { continue }
            readAny = true
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "01" { count += 1 }
            }
        }
        return readAny ? count : nil
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
        guard let data = FileManager.default.contents(atPath: table) else { return nil }
        let remote = ipv6LoopbackHex + ":" + String(format: "%04X", port)
        var inodes: Set<String> = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count > 9, fields[2] == remote, fields[3] == "02" { inodes.insert(String(fields[9])) }
        }
        return inodes
    }
}
