import Foundation
import TestSupport
import Testing

@testable import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server closes a connection's socket once the connection has ended, also when a fault ended it after a wait.
///
/// The server runs in this process, so its sockets are this process's: the test finds the one it accepted for a
/// connection by the two ports, and looks for its inode in `/proc/self/fd` (which other tests running beside this one
/// cannot confuse, as they could a count).
@Suite("Server socket release")
struct ServerSocketReleaseTests {
    /// A response that waits with its connection suspended and ends once the client has gone, or its watch is over.
    struct EndedAfterWait: CustomTestStringConvertible, Sendable {
        var target: String
        /// How many body bytes the client reads before it waits.
        var reads: Int
        /// How long the client holds the connection after reading, before it closes it.
        var holds: Duration
        var outcome: JournalOutcome
        var testDescription: String { "\(target), the client closing after \(holds)" }
    }

    @Test(
        "a connection a fault ended after a wait has its socket closed, while an older connection stays open",
        arguments: [
            // The client closes while the drop watches for its answer (every 10 ms for up to 1 s).
            EndedAfterWait(
                target: "/bytes/64K?drop-after=1K", reads: 1024, holds: .milliseconds(100), outcome: .dropped),
            // The client still holds the connection when the watch is over.
            EndedAfterWait(
                target: "/bytes/64K?drop-after=1K", reads: 1024, holds: .milliseconds(1300), outcome: .dropped),
            // The client gives up on a stall, noticed at the next look (every 200 ms).
            EndedAfterWait(
                target: "/bytes/64K?stall-after=1K&stall-for=60s", reads: 1024, holds: .milliseconds(100),
                outcome: .stalled),
        ])
    func socketClosedAfterWait(_ example: EndedAfterWait) async throws {
        // One libmicrohttpd thread, so the older connection is ahead of the faulted one in that thread's connections.
        // libmicrohttpd 0.9.75 frees a connection its body reader closed only when it next visits it; it never did
        // for one resumed from a wait while an older connection was open, and the socket stayed until the idle
        // timeout (60 s).
        try await withRangeServer(Fixtures.configuration { $0.threads = 1 }) { server in
            let port = server.port
            let older = try RawHTTPConnection(port: port)
            let faulted = try RawHTTPConnection(port: port)
            let socket = try await FaultWire.blocking {
                [older = UncheckedConnection(older), faulted = UncheckedConnection(faulted)] in
                try older.connection.request("GET", "/healthz")
                let first = try older.connection.readResponse()
                guard first.status == 200 else { throw RawHTTPError("/healthz answered \(first.status)") }
                try faulted.connection.request("GET", example.target)
                let response = try faulted.connection.readResponse(bodyLimit: example.reads)
                guard response.status == 200, response.body.count == example.reads else {
                    throw RawHTTPError("\(response.status) with \(response.body.count) body bytes")
                }
                return acceptedSocket(port: port, client: faulted.connection.fd)
            }
            let inode = try #require(socket, "the server's socket for the faulted connection")
            try await Task.sleep(for: example.holds)
            // A FIN, as a close would send, with the descriptor kept until the connection object goes.
            _ = shutdown(faulted.fd, Int32(SHUT_RDWR))

            let entries = await server.journal.settled(timeout: scaled(.seconds(10))).entries
            let entry = try #require(entries.first { $0.target == example.target })
            #expect(entry.outcome == example.outcome)
            #expect(entry.abandoned == false)
            // Bounded: a socket still open after this is one the server lost track of (it stayed 60 s).
            let deadline = ContinuousClock.now + scaled(.seconds(5))
            while isOpen(inode), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!isOpen(inode), "the server still holds the socket of a connection that has ended")

            // The older connection was left alone.
            let again = try await FaultWire.blocking { [older = UncheckedConnection(older)] in
                try older.connection.request("GET", "/healthz")
                return try older.connection.readResponse()
            }
            #expect(again.status == 200 && again.ending == .complete)
        }
    }
}

/// A connection used by one thread at a time: handed to the blocking thread and back.
private struct UncheckedConnection: @unchecked Sendable {
    let connection: RawHTTPConnection
    init(_ connection: RawHTTPConnection) { self.connection = connection }
}

/// The inode of the socket this process accepted for the client socket `client`: the one whose local port is
/// `port` and whose peer's port is the client's own. Nil if there is none.
private func acceptedSocket(port: Int, client: Int32) -> UInt64? {
    guard let clientPort = socketPort(client, peer: false) else { return nil }
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for name in names {
        guard let fd = Int32(name), fd != client, socketPort(fd, peer: false) == port,
            socketPort(fd, peer: true) == clientPort
        else { continue }
        var status = stat()
        guard fstat(fd, &status) == 0 else { continue }
        return UInt64(status.st_ino)
    }
    return nil
}

/// Whether any descriptor of this process is the socket with `inode`.
private func isOpen(_ inode: UInt64) -> Bool {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let target = "socket:[\(inode)]"
    return names.contains { name in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name)) == target
    }
}
