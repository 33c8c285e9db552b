import Conformance
import Foundation

/// fixtures/clients/downloader.py, the small downloaders these tests run as clients, with a scratch directory of
/// their own: its `naive`, `careful` and `rounded` modes retry and resume by themselves (a `curl -C -` without a
/// validator; a yt-dlp-like prober that resumes with If-Range; the same from a 64 KiB boundary), as do `named-keep`
/// and `named-follow`, which name the file from Content-Disposition; its `once`, `flaky` and `hang` modes do not. The script's docstring describes each mode.
///
/// Every start appends its PID to ``log``, so a test counts how often the harness started the client.
struct TestDownloader {
    /// The script, by absolute path: a reproducer's client command runs it from another directory.
    static let script = BuiltProducts.repositoryRoot + "/fixtures/clients/downloader.py"

    /// A new directory of this downloader's own, for its log and whatever else a test keeps beside it.
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "test-downloader-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The file each start appends its PID to.
    var log: String { directory + "/starts.log" }

    /// `NAME=python3 downloader.py MODE {url} {output} LOG`, for `--client-command`; `{output-dir}` for the modes
    /// that name the file from the server (`named-keep`, `named-follow`).
    func specification(_ name: String, mode: String) -> String {
        let output = mode.hasPrefix("named-") ? "{output-dir}" : "{output}"
        return "\(name)=python3 \(Self.script) \(mode) {url} \(output) \(log)"
    }

    /// The client that runs the downloader in `mode`, named `name` (the mode when not given).
    func client(_ mode: String, name: String? = nil) throws -> SubprocessClient {
        try SubprocessClient.command(specification(name ?? mode, mode: mode))
    }

    /// The PIDs of every start so far.
    var starts: [Int32] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
