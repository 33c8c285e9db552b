import Foundation
import Testing

@testable import RangeServer

/// The request path is wire-neutral: libmicrohttpd is known only to the front end that runs on it.
@Suite("Front-end boundary")
struct FrontEndBoundaryTests {
    /// The folders whose files may import CMicroHTTPD: the libmicrohttpd front end and its listeners.
    static let allowed = ["Sources/RangeServer/Daemon/", "Sources/RangeServer/Listeners/"]

    @Test("only Daemon/ and Listeners/ import CMicroHTTPD; the router, faults, journal and resources do not")
    func onlyTheFrontEndImportsLibmicrohttpd() throws {
        let files = try Self.swiftSources(under: "Sources")
        // The walk found the package's sources, so an empty answer below cannot come from looking in the wrong place.
        #expect(files.count > 100)
        var importers: [String] = []
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let imports = text.split(separator: "\n").contains { line in
                // `import X`, `@preconcurrency import X`, `internal import X`, `import struct X.Y`.
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { return false }
                let module = words[words.index(after: index)...].first {
                    !$0.hasPrefix("struct") && !$0.hasPrefix("func")
                }
                return module?.split(separator: ".").first == "CMicroHTTPD"
            }
            if imports { importers.append(file) }
        }
        #expect(!importers.isEmpty, "the front end itself imports CMicroHTTPD")
        let outside = importers.filter { file in !Self.allowed.contains { file.hasPrefix($0) } }
        #expect(outside.isEmpty, "CMicroHTTPD imported outside the front end: \(outside)")
    }

    /// A front end that cannot stall a response (say, one whose writes cannot be held back).
    struct NoStallConnection: ExchangeConnection {
        var departure: PeerDeparture? { nil }
        func capBuffering(at bytes: Int) {}
        func refusal(of key: FaultKey) -> String? {
            key.name == "stall-after" ? "cannot be carried out by this front end" : nil
        }
    }

    @Test("a front end refuses a key it cannot carry out: a 400 whose one line names the key and its value")
    func frontEndRefusesAKey() throws {
        let router = Router(
            configuration: Fixtures.configuration { _ in }, rootPath: Fixtures.files, scenarios: [:],
            journal: try Journal(limit: 10))
        func plan(_ target: String) -> ResponsePlan {
            router.plan(
                for: IncomingRequest(
                    method: "GET", target: target, httpVersion: "HTTP/1.1", headers: [], peerAddress: "127.0.0.1",
                    connectionID: 1, connection: NoStallConnection()))
        }
        let refused = plan("/bytes/64K?rate=1M&stall-after=1K")
        #expect(refused.status == 400)
        #expect(
            refused.body
                == .literal(
                    Array("bad request: parameter 'stall-after=1K' cannot be carried out by this front end\n".utf8))
        )
        // The same front end serves what it can carry out, and a request without faults never asks.
        #expect(plan("/bytes/64K?rate=1M").status == 200)
        #expect(plan("/bytes/64K").status == 200)
    }

    /// Every `.swift` file under `directory`, as paths from the package root.
    static func swiftSources(under directory: String) throws -> [String] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: directory))
        return enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.map { "\(directory)/\($0)" }
    }
}
