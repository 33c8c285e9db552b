import Foundation

/// A fresh empty directory for one test, named `PREFIX-LABEL-XXXXXXXX`, under one directory per test process that is
/// removed when the process exits.
///
/// Tests leave files a failing assertion may need a person to look at while the run goes on, so nothing is removed
/// per test; but a test process that ended leaves nothing behind (before, every `swift test` left about 1,500
/// directories in /tmp).
public func makeTestDirectory(prefix: String, label: String) -> String {
    let path = testProcessDirectory + "/\(prefix)-\(label)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// This process's parent of every ``makeTestDirectory(prefix:label:)`` directory: made on first use, with its removal
/// registered with `atexit`.
private let testProcessDirectory: String = {
    let path = processDirectoryPath()
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: processDirectoryPath()) }
    return path
}()

private func processDirectoryPath() -> String { NSTemporaryDirectory() + "rangeserver-tests-\(getpid())" }
