import Conformance
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `rangecheck` end to end on the rows that change the client's world, as root: it starts itself again in a private
/// mount namespace, mounts there, and leaves the machine as it found it, also when killed with SIGKILL.
@Suite(.serialized, .enabled(if: geteuid() == 0, "mounting needs root"))
struct ClientWorldRunTests {
    /// What a change to the machine's name resolution or mounts would show: `/etc/hosts`'s bytes and every mount
    /// table line naming it, in this process's (the machine's) namespace.
    static func hostsState() -> String {
        let hosts = (try? String(contentsOfFile: "/etc/hosts", encoding: .utf8)) ?? "<unreadable>"
        let mounts = mountLines().filter { $0.contains(" /etc/hosts ") }
        return ([hosts] + mounts).joined(separator: "\n")
    }

    static func mountLines(_ table: String = "/proc/self/mountinfo") -> [String] {
        ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static func makeDirectory() throws -> String {
        let directory =
            FileManager.default.temporaryDirectory.path + "/clientworld-run-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        return directory
    }

    @Test("disk-full and dead-ipv6 pass for engine and rangefetch; /etc/hosts untouched and no mount left behind")
    func bothRowsPassForOurClients() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = Self.hostsState()
        let json = directory + "/matrix.json"
        let child = try await ChildProcess.start(
            BuiltProducts.rangecheck,
            [
                "--client", "engine", "--client", "rangefetch", "--scenario", "disk-full,dead-ipv6", "--json", json,
                "--quiet",
            ],
            environment: .inherit.updating(["TMPDIR": directory + "/tmp"]))
        // `wait(limit:)` stretches its limit by the time scale itself.
        let status = await child.wait(limit: .seconds(300))
        #expect(status == .exited(0), "\(child.output)\n\(child.errors)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        let cells = try #require(document["cells"] as? [[String: Any]])
        #expect(cells.count == 4)
        for cell in cells {
            #expect(cell["result"] as? String == "pass", "\(cell)")
        }
        #expect(Self.hostsState() == before)
        #expect(!Self.mountLines().contains { $0.contains(directory) })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp") == [])
    }

    @Test("SIGKILL mid-row: the tmpfs and the hosts file were only ever in rangecheck's namespace, which ends with it")
    func aKilledHarnessLeavesNothing() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = Self.hostsState()
        let ownNamespace = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/mnt")
        let child = try await ChildProcess.start(
            BuiltProducts.rangecheck, ["--client", "engine", "--scenario", "disk-full", "--quiet"],
            environment: .inherit.updating(["TMPDIR": directory + "/tmp"]))
        let pid = try #require(child.processIdentifier)
        // The row's tmpfs, under the harness's TMPDIR, as rangecheck's own mount table shows it.
        var namespace: String?
        var seen: [String] = []
        for _ in 0..<scaled(seconds: 600) where seen.isEmpty && !child.hasExited {
            namespace = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/mnt")
            seen = Self.mountLines("/proc/\(pid)/mountinfo").filter { $0.contains(directory) && $0.contains("tmpfs") }
            if seen.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!seen.isEmpty, "no tmpfs seen in rangecheck's namespace: \(child.errors)")
        let theirs = try #require(namespace)
        #expect(theirs != ownNamespace)
        #expect(Self.mountLines("/proc/\(pid)/mountinfo").contains { $0.contains(" /etc/hosts ") })
        // Never visible outside, even while it runs.
        #expect(!Self.mountLines().contains { $0.contains(directory) })
        #expect(Self.hostsState() == before)

        child.send(SIGKILL)
        #expect(await child.wait(limit: .seconds(30)) == .signaled(SIGKILL))
        // The namespace ends with its last process: the in-process engine left none behind. Looked for until a
        // deadline (30 s, stretched by the time scale), as a loaded machine reaps the killed processes later.
        var holders: [Int32] = [0]
        let deadline = ContinuousClock.now + scaled(.seconds(30))
        while true {
            holders = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
                .filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\($0)/ns/mnt")) == theirs }
            guard !holders.isEmpty, ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(holders == [], "processes still in rangecheck's mount namespace")
        #expect(!Self.mountLines().contains { $0.contains(directory) })
        #expect(Self.hostsState() == before)
    }
}
