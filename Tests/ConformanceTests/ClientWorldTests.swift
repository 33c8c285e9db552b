import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Conformance

/// The rows that change the client's own world (`disk-full-at`, `entry: dead-ipv6`): their format, their judge, and
/// the pieces the runner builds them from, without a private mount namespace (the end-to-end runs, which need root,
/// are in ClientWorldRunTests).
@Suite struct ClientWorldTests {
    static func parse(_ json: String) throws -> ScenarioExpectation {
        try ScenarioExpectation.parse(ScenarioSection(parsing: json, source: "s.json", path: "expect"), scenario: "s")
    }

    @Test("disk-full-at takes a size; entry takes dead-ipv6")
    func theFormatParses() throws {
        let full = try Self.parse(#"{"outcome": "success", "steps": [{"disk-full-at": "2M"}]}"#)
        #expect(full.steps == [.diskFull(at: 2 << 20)])
        #expect(full.diskFullSize == 2 << 20)
        #expect(full.requiredCapabilities == [])
        #expect(MatrixRunner.describe(full.steps[0]) == "disk-full-at 2M")
        let dead = try Self.parse(#"{"outcome": "success", "entry": "dead-ipv6"}"#)
        #expect(dead.entry == .deadIPv6)
        #expect(dead.diskFullSize == nil)
    }

    @Test(arguments: [
        (
            #"{"outcome": "success", "steps": [{"disk-full-at": "50%"}]}"#,
            "s.json:1:51: expect.steps[0].disk-full-at: must be a size above 0 like 2M"
        ),
        (
            #"{"outcome": "success", "steps": [{"disk-full-at": "0"}]}"#,
            "s.json:1:51: expect.steps[0].disk-full-at: must be a size above 0 like 2M"
        ),
        (
            #"{"outcome": "success", "steps": [{"disk-full-at": "1M"}, {"disk-full-at": "2M"}]}"#,
            "s.json:1:33: expect.steps: has more than one disk-full-at step"
        ),
        (
            #"{"outcome": "success", "entry": "ipv6"}"#,
            #"s.json:1:33: expect.entry: "ipv6" is not server, blackhole or dead-ipv6"#
        ),
    ])
    func badValuesNameTheKey(json: String, prefix: String) {
        do {
            _ = try Self.parse(json)
            Issue.record("\(json) parsed")
        } catch {
            let message = (error as? ConformanceError)?.message ?? "\(error)"
            #expect(message.hasPrefix(prefix), "\(message)")
        }
    }

    // MARK: The judge

    static let length: UInt64 = 4 << 20
    static let expectation = ScenarioExpectation(
        outcome: .success, maxRefetched: 64 << 10, range: .atMost, ifRange: .etag, steps: [.diskFull(at: 2 << 20)])

    static func output(_ segments: [ContentSegment]) -> OutputFacts {
        OutputFacts(
            name: "out.bin", exists: true, size: segments.last?.range.upperBound ?? 0, segments: segments)
    }

    static func facts(first: ClientExit, left: [OutputFacts]) -> RunFacts {
        var facts = RunFacts(
            entries: [], outputs: [output([ContentSegment(range: 0..<length, version: 1)])], resourceLength: length,
            expectedVersion: 1, exit: .success, elapsed: .seconds(1))
        facts.diskFull = RunFacts.DiskFull(size: 2 << 20, exit: first, outputs: left)
        return facts
    }

    @Test("a failure on the full disk that keeps a correct prefix is no violation, and the note says what it kept")
    func aCleanFailurePasses() {
        let prefix = Self.output([ContentSegment(range: 0..<(2 << 20) - 8192, version: 1)])
        let found = Judge.diskFullFindings(Self.facts(first: .failure("exit 1"), left: [prefix]))
        #expect(found.reasons == [])
        #expect(
            found.notes == [
                "on a full disk (2M of room) it reported failure (exit 1) and left 2040K of out.bin correct; given "
                    + "room, it ran again"
            ])
        // A preallocated tail past the prefix is what a resume overwrites.
        let preallocated = Self.output([
            ContentSegment(range: 0..<(1 << 20), version: 1),
            ContentSegment(range: (1 << 20)..<Self.length, version: nil),
        ])
        #expect(Judge.diskFullFindings(Self.facts(first: .failure("x"), left: [preallocated])).reasons == [])
        #expect(Judge.diskFullFindings(Self.facts(first: .failure("x"), left: [.missing("out.bin")])).reasons == [])
    }

    @Test("success on the full disk is corrupt: a truncated file presented as complete")
    func successOnAFullDiskIsCorrupt() {
        let truncated = Self.output([ContentSegment(range: 0..<(2 << 20), version: 1)])
        let facts = Self.facts(first: .success, left: [truncated])
        let judgement = Judge.judgement(of: Self.expectation, in: facts)
        #expect(judgement.grade == .corrupt)
        #expect(
            judgement.violations.first
                == "reported success on a full disk (2M of room), leaving out.bin 2M of 4M")
    }

    @Test("wrong bytes before correct ones, another version, or a cancel on the full disk are caught")
    func badLeftoversAreCaught() {
        let hole = Self.output([
            ContentSegment(range: 0..<4096, version: nil), ContentSegment(range: 4096..<(1 << 20), version: 1),
        ])
        #expect(
            Judge.diskFullFindings(Self.facts(first: .failure("x"), left: [hole])).reasons
                == [
                    Violation(
                        "on the full disk it left bytes of out.bin that are not the representation at offset 0",
                        grade: .corrupt)
                ])
        let other = Self.output([ContentSegment(range: 0..<(1 << 20), version: 2)])
        #expect(Judge.diskFullFindings(Self.facts(first: .failure("x"), left: [other])).reasons.count == 1)
        #expect(
            Judge.diskFullFindings(Self.facts(first: .cancelled, left: [])).reasons
                == [Violation("reported cancelled on a full disk (2M of room), not failure", grade: .fail)])
    }

    @Test("the dead-ipv6 note counts the attempts; none without a count")
    func deadIPv6Notes() {
        var facts = Self.facts(first: .failure("x"), left: [])
        facts.diskFull = nil
        #expect(Judge.deadIPv6Notes(facts) == [])
        facts.ipv6Attempts = 0
        #expect(Judge.deadIPv6Notes(facts) == ["did not try IPv6: no connect to the dead [::1] was seen"])
        facts.ipv6Attempts = 2
        #expect(Judge.deadIPv6Notes(facts) == ["tried the dead [::1] 2 times (connects that never complete)"])
    }

    // MARK: The pieces

    @Test("the private hosts file keeps the machine's lines and adds the name on ::1, then on 127.0.0.1")
    func hostsText() {
        let text = ClientWorld.hostsText(original: "127.0.0.1 localhost")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "127.0.0.1 localhost")
        #expect(
            Array(lines.suffix(2)) == ["::1 \(ClientWorld.dualStackName)", "127.0.0.1 \(ClientWorld.dualStackName)"])
        #expect(ClientWorld.dualStackName.hasSuffix(".test"))
    }

    @Test("pending connects to [::1]:PORT are read from a tcp6 table by inode, SYN_SENT only")
    func pendingConnectsAreParsed() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loopback = "00000000000000000000000001000000"
        let table = """
              sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: \(loopback):E719 00000000000000000000000000000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 2953121 2
               1: \(loopback):D8EC \(loopback):E719 01 00000000:00000000 00:00000000 00000000     0        0 2953122 2
               2: \(loopback):D8FC \(loopback):E719 02 00000001:00000000 01:00000046 00000000     0        0 2953123 2
               3: \(loopback):D900 \(loopback):E71A 02 00000001:00000000 01:00000046 00000000     0        0 2953124 2

            """
        try table.write(toFile: directory + "/tcp6", atomically: true, encoding: .utf8)
        #expect(
            ConnectionSampler.pendingConnects(toIPv6LoopbackPort: 0xE719, table: directory + "/tcp6") == ["2953123"])
        #expect(ConnectionSampler.pendingConnects(toIPv6LoopbackPort: 1, table: directory + "/tcp6") == [])
        #expect(ConnectionSampler.pendingConnects(toIPv6LoopbackPort: 1, table: directory + "/none") == nil)
    }

    @Test("established connections are counted once each, however often a read of the table lists them")
    func establishedCountsEachConnectionOnce() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // As a read was once seen to give it: the accepted connection to 127.0.0.1:9DCB listed again further on, its
        // line number changed; beside it a second connection, one of another port and one not established.
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:9DCB 00000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 3898179 2
              59: 0100007F:9DCB 0100007F:B70C 01 00000000:00000000 00:00000000 00000000     0        0 0 1
              60: 0100007F:9DCB 0100007F:B70D 01 00000000:00000000 00:00000000 00000000     0        0 0 1
              61: 0100007F:9DCC 0100007F:B70E 01 00000000:00000000 00:00000000 00000000     0        0 0 1
              62: 0100007F:9DCB 0100007F:B70F 06 00000000:00000000 03:000008BA 00000000     0        0 0 3
              75: 0100007F:9DCB 0100007F:B70C 01 00000000:00000000 00:00000000 00000000     0        0 0 1

            """
        try table.write(toFile: directory + "/tcp", atomically: true, encoding: .utf8)
        #expect(ConnectionSampler.established(toLocal: "127.0.0.1", port: 0x9DCB, tables: directory) == 2)
        #expect(ConnectionSampler.established(toLocal: "127.0.0.1", port: 0x9DCC, tables: directory) == 1)
        #expect(ConnectionSampler.established(port: 0x9DCB, tables: directory) == 2)
        #expect(ConnectionSampler.established(toLocal: "::1", port: 0x9DCB, tables: directory) == nil)
    }

    @Test("a pair waits for a quiet port: a connection left open is counted as residue, a closed one is not")
    func quietPort() async throws {
        // Forty listeners first: /proc/net/tcp lists listening sockets before the others, so the connection below
        // is listed past the table's first page (which is all a read that trusts the file's size would see).
        let listeners = (0..<40).map { _ in Self.loopbackSocket(listening: true) }
        defer { for listener in listeners { close(listener) } }
        #expect(listeners.allSatisfy { $0 >= 0 })
        #expect(try #require(ConnectionSampler.contents(ofTable: "/proc/net/tcp")).count > 4096)
        // With the dead-IPv6 blackhole, as the matrix starts the server for a dead-ipv6 row: it listens on [::1] at
        // the server's own port, its accept queue kept full by a connection of its own, which is not a client's.
        var configuration = RangeServer.Configuration()
        configuration.deadIPv6 = true
        try await withRangeServer(configuration) { server in
            #expect(server.deadIPv6Port == server.port)
            #expect(ConnectionSampler.established(toLocal: "::1", port: server.port) ?? 0 >= 1)
            #expect(ConnectionSampler.established(toLocal: "127.0.0.1", port: server.port) == 0)
            // A connection an earlier pair left: connected, never used.
            let socket = Self.loopbackSocket(listening: false, connectingTo: server.port)
            try #require(socket >= 0)
            // Closed once, below, by hand (nothing between throws): a second close could take a descriptor number
            // another test's server had meanwhile been given.
            // The server's side of it is established once the handshake is done.
            #expect(
                await waitUntil(within: .seconds(5)) {
                    ConnectionSampler.established(toLocal: "127.0.0.1", port: server.port) == 1
                })
            #expect(
                await ConnectionSampler.awaitQuiet(localHost: "127.0.0.1", port: server.port, within: .milliseconds(50))
                    == 1)
            close(socket)
            #expect(
                await ConnectionSampler.awaitQuiet(localHost: "127.0.0.1", port: server.port, within: .seconds(5)) == 0)
        }
    }

    @Test("the dead [::1] counts the connects it drops, which a watch that sleeps through them would miss")
    func deadIPv6CountsDroppedConnects() async throws {
        var configuration = RangeServer.Configuration()
        configuration.deadIPv6 = true
        try await withRangeServer(configuration) { server in
            let before = try #require(server.deadIPv6DroppedConnects)
            // A connect left to the kernel (non-blocking): its SYN meets the full accept queue and is dropped.
            let socket = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            try #require(socket >= 0)
            defer { close(socket) }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(server.port).bigEndian)
            address.sin6_addr = in6addr_loopback
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
            #expect(status == -1 && errno == EINPROGRESS)
            #expect(
                await waitUntil(within: .seconds(5)) { (server.deadIPv6DroppedConnects ?? 0) > before },
                "the listener's drop counter did not rise")
        }
        // Without the listener there is no count.
        try await withRangeServer(RangeServer.Configuration()) { server in
            #expect(server.deadIPv6DroppedConnects == nil)
        }
    }

    /// A new empty directory under the temporary directory, for tables and mount lists a test writes; the caller
    /// removes it.
    static func scratchDirectory() throws -> String {
        let directory =
            FileManager.default.temporaryDirectory.path + "/clientworld-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A TCP socket on 127.0.0.1: listening on a port of its own, or connected to `port`; -1 when that failed.
    static func loopbackSocket(listening: Bool, connectingTo port: Int = 0) -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return -1 }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                let size = socklen_t(MemoryLayout<sockaddr_in>.size)
                if listening { return bind(socket, pointer, size) == 0 ? listen(socket, 1) : -1 }
                return connect(socket, pointer, size)
            }
        }
        guard status == 0 else {
            close(socket)
            return -1
        }
        return socket
    }

    @Test("mount points are read from a mountinfo table, escapes included")
    func mountPoints() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let table = """
            22 1 0:21 / / rw,relatime - ext4 /dev/root rw
            40 22 0:40 / /tmp/rangecheck.abc/disk rw,nosuid,nodev - tmpfs tmpfs rw,size=2048k
            41 22 0:41 / /tmp/a\\040b rw - tmpfs tmpfs rw

            """
        try table.write(toFile: directory + "/mountinfo", atomically: true, encoding: .utf8)
        #expect(ClientWorld.isMountPoint("/tmp/rangecheck.abc/disk", mountinfo: directory + "/mountinfo"))
        #expect(ClientWorld.isMountPoint("/tmp/a b", mountinfo: directory + "/mountinfo"))
        #expect(!ClientWorld.isMountPoint("/tmp/rangecheck.abc", mountinfo: directory + "/mountinfo"))
    }

    @Test("in a process that did not make a private mount namespace (this test runner) both rows are n/a, with why")
    func withoutAPrivateNamespaceTheRowsAreNotApplicable() async throws {
        #expect(ClientWorld.unavailableReason != nil)
        var configuration = RangeServer.Configuration()
        configuration.root = "fixtures/files"
        configuration.scenariosDirectory = "fixtures/scenarios"
        let entries = try CatalogueEntry.load(directory: "fixtures/scenarios", root: "fixtures/files")
        for (name, needs) in [
            ("disk-full", "disk-full-at needs a tmpfs the harness mounts: "),
            ("dead-ipv6", "dead-ipv6 needs a hosts file of the harness's own: "),
        ] {
            let entry = try #require(entries.first { $0.name == name })
            let cell = try await withRangeServer(configuration) { server in
                await MatrixRunner.runPair(entry, client: EngineClient.make(), server: server, options: .forTests)
            }
            guard case .notApplicable(let reason) = cell.result else {
                Issue.record("\(name): \(cell.result)")
                continue
            }
            #expect(reason.hasPrefix(needs), "\(reason)")
        }
    }
}
