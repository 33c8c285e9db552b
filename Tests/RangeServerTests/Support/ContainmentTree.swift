import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary directory holding a served `root/`, a secret file outside it, a sibling directory whose name
/// extends the root's, and symlinks, for the path-containment tests.
///
/// ```
/// base/SECRET                 outside the root
/// base/SIBLING/SECRET         outside, in a directory whose name extends "root"
/// base/root/...               the given files and links
/// ```
struct ContainmentTree {
    let base: String
    var root: String { base + "/root" }

    /// - Parameters:
    ///   - prefix: the temporary directory's name prefix.
    ///   - secretName: the file name of the secret, both in `base` and in the sibling.
    ///   - secret: the content nothing served may ever contain.
    ///   - sibling: the sibling directory's name (it should start with "root").
    ///   - files: files under the root, relative path and content.
    ///   - links: symlinks under the root, relative path and destination; `{base}` in a destination stands for
    ///     the temporary directory, which is only known here.
    init(
        prefix: String, secretName: String, secret: String, sibling: String, files: [(String, String)],
        links: [(String, String)]
    ) throws {
        base = NSTemporaryDirectory() + prefix + UUID().uuidString
        let manager = FileManager.default
        try manager.createDirectory(atPath: base + "/root/sub", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: base + "/" + sibling, withIntermediateDirectories: true)
        try secret.write(toFile: base + "/" + secretName, atomically: true, encoding: .utf8)
        try secret.write(toFile: base + "/" + sibling + "/" + secretName, atomically: true, encoding: .utf8)
        for (path, content) in files {
            try content.write(toFile: base + "/root/" + path, atomically: true, encoding: .utf8)
        }
        for (name, destination) in links {
            let target = destination.replacingOccurrences(of: "{base}", with: base)
            guard symlink(target, base + "/root/" + name) == 0 else {
                throw RawHTTPError("symlink \(name) failed: errno \(errno)")
            }
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: base) }
}
