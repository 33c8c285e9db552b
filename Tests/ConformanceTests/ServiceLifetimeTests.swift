import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// A started service and its server are freed once the server is stopped and let go of. The server keeps the service
/// through its route; the service held the server back, and the pair was a cycle: every service started kept its
/// server, the server's journal and both catalogues until the process ended (LeakSanitizer's largest report,
/// docs/reliability.md).
@Suite("Conformance service lifetime")
struct ServiceLifetimeTests {
    @Test("a service, its server and the server's journal are freed after stop(), every time")
    func freedAfterStop() async throws {
        for round in 0..<2 {
            weak var service: ConformanceService?
            weak var server: RangeServer?
            weak var journal: Journal?
            try await withService { started, running, client in
                service = started
                server = running
                journal = running.journal
                // A run handed out, and an exchange in the journal.
                _ = try await client.createRun("plain", client: "lifetime")
                #expect(try await client.download(running.baseURL + "/bytes/1K").count == 1024)
            }
            // A route's task may still be finishing; it lets go within a moment.
            let deadline = ContinuousClock.now + scaled(.seconds(5))
            while service != nil || server != nil || journal != nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(service == nil, "round \(round): the service is still alive")
            #expect(server == nil, "round \(round): the server is still alive")
            #expect(journal == nil, "round \(round): the journal is still alive")
        }
    }
}
