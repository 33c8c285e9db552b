import RangeServer
import TestSupport

/// Paths inside the repository, found from this file's location so tests run from any directory.
enum Fixtures {
    static let packageRoot: String = {
        var path = #filePath
        for _ in 0..<4 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()
    static let files = packageRoot + "/fixtures/files"
    static let scenarios = packageRoot + "/fixtures/scenarios"

    /// A configuration serving the fixture files and scenarios on a free loopback port.
    static func configuration(
        _ change: (inout RangeServer.Configuration) -> Void = { _ in }
    ) -> RangeServer.Configuration {
        var configuration = RangeServer.Configuration()
        configuration.root = files
        // The server's idle timeout (60 s) is a deadline too: a test task waiting its turn on the two-thread pool
        // under a sanitizer must still find its connection open.
        configuration.connectionTimeout = scaled(seconds: configuration.connectionTimeout)
        configuration.scenariosDirectory = scenarios
        change(&configuration)
        return configuration
    }
}
