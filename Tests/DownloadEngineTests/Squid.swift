import Foundation
import TestSupport
import Testing

/// Debian's `squid` on loopback, for the tests that hold the engine against a real proxy (scripts/test installs it
/// when it is missing).
///
/// Its configuration is the one the package ships (`/etc/squid/squid.conf`), access rules included, with only what a
/// test needs changed: the port (on 127.0.0.1), the PID file and the logs in a directory of its own, no ICMP pinger
/// (a helper process), and no wait at shutdown. ``Options`` adds the test's own rules: ports that may be `CONNECT`ed
/// to besides 443 (the TLS test port), basic authentication, or a refusal of everything.
///
/// Its access log is the witness that a request went through it (``accessLog``).
final class Squid: Sendable {
    /// The program, as Debian installs it.
    static let executable = "/usr/sbin/squid"
    /// The shipped configuration.
    static let shippedConfiguration = "/etc/squid/squid.conf"

    /// The user and password of ``Options/authenticates``, and their `Basic` `Proxy-Authorization` value.
    static let user = "fetcher"
    static let password = "s3cret:w0rd"
    static var authorization: String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }

    /// What the test adds to the shipped rules.
    struct Options: Sendable {
        /// Ports `CONNECT` may reach besides 443: added to the shipped `SSL_ports`.
        var connectPorts: [Int] = []
        /// Only requests with ``Squid/user``'s credentials are served; others get `407`.
        var authenticates = false
        /// Every request is refused with `403`, before the shipped rules.
        var deniesAll = false
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    /// Its directory: configuration, PID file and logs.
    let directory: String
    private let process: ChildProcess

    private init(port: Int, directory: String, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// `http://127.0.0.1:PORT`.
    var url: String { "http://127.0.0.1:\(port)" }
    /// `127.0.0.1:PORT`, as messages name it.
    var authority: String { "127.0.0.1:\(port)" }

    /// The access log's lines so far (`TCP_MISS/200 ... GET http://...`, `TCP_TUNNEL/200 ... CONNECT host:port`,
    /// `TCP_DENIED/403 ...`): squid writes a line when a transaction ends.
    var accessLog: [String] {
        ((try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    /// The configuration: the shipped file with the port and paths changed and `options`' rules added.
    static func configuration(shipped: String, port: Int, directory: String, options: Options) -> String {
        var lines: [String] = []
        for line in shipped.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("http_port ") {
                lines.append("http_port 127.0.0.1:\(port)")
                continue
            }
            if line.hasPrefix("coredump_dir ") {
                lines.append("coredump_dir \(directory)")
                continue
            }
            // The test's rules go before the first shipped access rule, which they must precede to count.
            if line.hasPrefix("http_access "), !lines.contains("# test rules") {
                lines.append("# test rules")
                if options.deniesAll { lines.append("http_access deny all") }
                if options.authenticates {
                    lines.append("auth_param basic program /usr/lib/squid/basic_ncsa_auth \(directory)/passwd")
                    lines.append("auth_param basic children 1 startup=1 idle=1")
                    lines.append("acl authenticated proxy_auth REQUIRED")
                    lines.append("http_access deny !authenticated")
                }
            }
            lines.append(line)
            if line.hasPrefix("acl SSL_ports port ") {
                for port in options.connectPorts where !lines.contains("acl SSL_ports port \(port)") {
                    lines.append("acl SSL_ports port \(port)")
                }
            }
        }
        lines += [
            "pid_filename \(directory)/squid.pid", "access_log stdio:\(directory)/access.log",
            "cache_log \(directory)/cache.log", "pinger_enable off", "shutdown_lifetime 0 seconds",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Starts squid on a free loopback port and waits until it accepts connections.
    ///
    /// - Throws: When squid is not installed (the message says how to get it), or it did not start: its cache log's
    ///   last lines are in the error.
    static func start(_ options: Options = .init()) async throws -> Squid {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw Failure("squid is not installed: scripts/test installs it, or run 'apt-get install squid'")
        }
        let shipped = try String(contentsOfFile: shippedConfiguration, encoding: .utf8)
        var lastError = ""
        for _ in 0..<3 {
            let directory = NSTemporaryDirectory() + "squid-test-\(UUID().uuidString.prefix(8))"
            // World-writable: started as root, squid runs as the `proxy` user and writes its logs here.
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
            try "\(user):$apr1$rangetst$I.l23ylAkt91krI.Xuad..\n".write(
                toFile: directory + "/passwd", atomically: true, encoding: .utf8)
            let port = try freePort()
            let configuration = Self.configuration(
                shipped: shipped, port: port, directory: directory, options: options)
            try configuration.write(toFile: directory + "/squid.conf", atomically: true, encoding: .utf8)
            let process = try await ChildProcess.start(executable, ["-N", "-f", directory + "/squid.conf"])
            let squid = Squid(port: port, directory: directory, process: process)
            if await squid.waitUntilAccepting() { return squid }
            lastError = squid.cacheLogTail
            await squid.stop()
        }
        throw Failure("squid did not start: \(lastError)")
    }

    /// Stops squid and removes its directory. SIGKILL: a clean shutdown still took a second or two
    /// (`shutdown_lifetime 0`), and there is nothing to keep (no disk cache; the access log is written unbuffered,
    /// and an authentication helper exits when its pipe from squid closes).
    func stop() async {
        process.send(SIGKILL)
        _ = await process.wait(limit: .seconds(10))
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The last lines of the cache log, for an error message.
    var cacheLogTail: String {
        let log = (try? String(contentsOfFile: directory + "/cache.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").suffix(5).joined(separator: " | ") + " " + process.errors
    }

    /// Polls the port until squid accepts a TCP connection (it binds after reading its configuration), for at
    /// most 30 seconds stretched by the time scale (a deadline: a loaded machine starts it slowly too), or until it
    /// exits.
    private func waitUntilAccepting() async -> Bool {
        let deadline = ContinuousClock.now + scaled(.seconds(30))
        while true {
            if process.hasExited { return false }
            if Self.accepts(port) { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A port nothing listens on now: bound to port 0 and released. Another process may take it before squid
    /// does; `start` then tries again.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: \(errno)") }
        defer { close(fd) }
        var address = loopback(0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw Failure("bind: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Runs `body` with a ``Squid`` that is stopped after, whether `body` returned or threw.
func withSquid<T>(_ options: Squid.Options = .init(), _ body: (Squid) async throws -> T) async throws -> T {
    let squid = try await Squid.start(options)
    do {
        let result = try await body(squid)
        await squid.stop()
        return result
    } catch {
        await squid.stop()
        throw error
    }
}
