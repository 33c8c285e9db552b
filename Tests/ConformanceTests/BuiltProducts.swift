import Foundation

/// Executables of this package built beside the test bundle, and tools on PATH, for the tests that run them as a
/// user would: `swift build --build-tests` builds every product into the directory the test runner runs from.
enum BuiltProducts {
    /// The build directory's path of `product`; where it would be when it has not been built.
    static func path(of product: String) -> String {
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent)
        }
        candidates.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
        for directory in candidates where FileManager.default.isExecutableFile(atPath: directory + "/" + product) {
            return directory + "/" + product
        }
        return candidates[0] + "/" + product
    }

    /// `rangecheck`, built beside the tests.
    static var rangecheck: String { path(of: "rangecheck") }

    /// The path of `tool` on PATH, or nil when it is not installed.
    static func onPath(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// The package's root: `swift test` runs the tests there.
    static var repositoryRoot: String { FileManager.default.currentDirectoryPath }
}
