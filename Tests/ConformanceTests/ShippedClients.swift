import Conformance
import TestSupport

/// The client definitions shipped in fixtures/clients, by the names the tests used when the peers were Swift values.
extension SubprocessClient {
    /// The shipped definition `name`, as a column. A definition that does not load gives a column of the same name
    /// whose program does not exist, so every test using it fails, naming the file's error.
    static func shipped(_ name: String) -> SubprocessClient {
        do {
            if let client = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot).client(named: name)
                as? SubprocessClient
            {
                return client
            }
            return broken(name, "fixtures/clients/\(name).json is missing")
        } catch {
            return broken(name, error.message)
        }
    }

    private static func broken(_ name: String, _ reason: String) -> SubprocessClient {
        SubprocessClient(
            name: name, program: "/nonexistent/\(reason)", capabilities: [], invocation: reason, transientExitCodes: []
        ) { _ in throw ConformanceError.invalidClientDefinition(reason) }
    }

    static var curl: SubprocessClient { shipped("curl") }
    static var wget: SubprocessClient { shipped("wget") }
    static var wget2: SubprocessClient { shipped("wget2") }
    static var aria2c: SubprocessClient { shipped("aria2c") }
    static var aria2cSegmented: SubprocessClient { shipped("aria2c-x4") }
    static var axel: SubprocessClient { shipped("axel") }
    static var axelSegmented: SubprocessClient { shipped("axel-n4") }
}
