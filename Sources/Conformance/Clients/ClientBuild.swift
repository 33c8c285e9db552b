import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A definition's build step: the commands that make its program (a Go driver compiled against Debian's packaged
/// sources, a virtual environment with a pinned library), run once into a directory of their own before the column's
/// first run.
///
/// The directory is named for a digest of the commands and of every file under `{client-dir}` they name, so a
/// changed pin or driver builds again and an unchanged one is reused: once per version. A finished build leaves a
/// stamp; a failed one leaves nothing, so the next run tries again. Two harnesses building the same column (the two
/// schemes of `scripts/results`) take turns on a lock file beside the directory.
public struct ClientBuild: Hashable, Sendable {
    /// The commands, each a program and its arguments; `{client-dir}` and `{build-dir}` are filled in.
    public var steps: [[String]]

    /// A build of these commands.
    ///
    /// - Parameters:
    ///   - steps: the commands, each a program and its arguments.
    public init(steps: [[String]]) {
        self.steps = steps
    }

    /// The placeholders a build step may use.
    static let placeholders: Set<String> = ["client-dir", "build-dir"]

    /// The file a finished build leaves in its directory.
    static let stampName = ".rangecheck-built"

    /// The time one step may take (a pip install over a slow link).
    static let stepLimit: Duration = .seconds(900)

    /// Where builds go when `RANGECHECK_BUILDS` does not say: `$XDG_CACHE_HOME/rangecheck/builds`, else
    /// `~/.cache/rangecheck/builds`.
    public static var defaultRoot: String {
        let environment = ProcessInfo.processInfo.environment
        if let root = environment["RANGECHECK_BUILDS"], !root.isEmpty { return root }
        if let cache = environment["XDG_CACHE_HOME"], !cache.isEmpty { return "\(cache)/rangecheck/builds" }
        return "\(NSHomeDirectory())/.cache/rangecheck/builds"
    }

    /// The build directory of the column `name` whose definition lives in `clientDirectory`: `ROOT/NAME-DIGEST`.
    ///
    /// - Parameters:
    ///   - name: the column's name.
    ///   - clientDirectory: the definition's directory (`{client-dir}`).
    ///   - root: the directory holding every build.
    /// - Returns: the path.
    public func directory(name: String, clientDirectory: String, root: String = ClientBuild.defaultRoot) -> String {
        var digest = SHA256()
        for step in steps {
            for word in step {
                digest.update(data: Data(word.utf8))
                digest.update(data: Data([0]))
                // A driver's source is part of the version: a changed driver is built again.
                for file in Self.namedFiles(in: word, clientDirectory: clientDirectory) {
                    if let contents = FileManager.default.contents(atPath: file) { digest.update(data: contents) }
                }
            }
            digest.update(data: Data([1]))
        }
        let hex = digest.finalize().prefix(6).map { String(format: "%02x", $0) }.joined()
        return "\(root)/\(name)-\(hex)"
    }

    /// The paths under `{client-dir}` a word names (`{client-dir}/drivers/grab/main.go`), made absolute.
    static func namedFiles(in word: String, clientDirectory: String) -> [String] {
        var files: [String] = []
        var rest = Substring(word)
        while let found = rest.range(of: "{client-dir}/") {
            let path = rest[found.upperBound...].prefix { !" \t\"'`;&|()<>".contains($0) }
            if !path.isEmpty { files.append("\(clientDirectory)/\(path)") }
            rest = rest[found.upperBound...]
        }
        return files
    }

    /// The steps with their placeholders filled. Only the two names are replaced: a step is often a shell line, whose
    /// other braces (`${Version}`) are the shell's.
    func commands(clientDirectory: String, buildDirectory: String) -> [[String]] {
        steps.map { step in
            step.map {
                $0.replacingOccurrences(of: "{client-dir}", with: clientDirectory)
                    .replacingOccurrences(of: "{build-dir}", with: buildDirectory)
            }
        }
    }

    /// The placeholder-like names in `word` that a build step does not know: `{name}` spelled in lower case and
    /// dashes, not a shell's `${NAME}`.
    static func unknownPlaceholders(in word: String) -> [String] {
        var unknown: [String] = []
        var rest = Substring(word)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            let name = rest[rest.index(after: open)..<close]
            let shell = open > rest.startIndex && rest[rest.index(before: open)] == "$"
            if !shell, !name.isEmpty, name.allSatisfy({ ("a"..."z").contains($0) || $0 == "-" }),
                !placeholders.contains(String(name))
            {
                unknown.append(String(name))
            }
            rest = rest[rest.index(after: close)...]
        }
        return unknown
    }

    /// Builds into `directory` unless a finished build is there.
    ///
    /// - Parameters:
    ///   - directory: the build directory (``directory(name:clientDirectory:root:)``).
    ///   - clientDirectory: the definition's directory.
    /// - Returns: nil when the build is there, else one line saying which step failed and how.
    public func prepare(directory: String, clientDirectory: String) async -> String? {
        let stamp = "\(directory)/\(Self.stampName)"
        if FileManager.default.fileExists(atPath: stamp) { return nil }
        let parent = (directory as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            return "its build directory \(parent) cannot be made: \(error.localizedDescription)"
        }
        let lockPath = "\(directory).lock"
        let lock = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard lock >= 0 else { return "its build lock \(lockPath) cannot be opened (errno \(errno))" }
        defer { close(lock) }
        // Taken without blocking a thread: another harness building the same column finishes first.
        let deadline = ContinuousClock.now + Self.stepLimit * max(1, steps.count)
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline else { return "another build of it held \(lockPath) too long" }
            try? await Task.sleep(for: .milliseconds(500))
        }
        defer { flock(lock, LOCK_UN) }
        if FileManager.default.fileExists(atPath: stamp) { return nil }
        try? FileManager.default.removeItem(atPath: directory)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            return "its build directory \(directory) cannot be made: \(error.localizedDescription)"
        }
        let commands = commands(clientDirectory: clientDirectory, buildDirectory: directory)
        var log = ""
        for (index, command) in commands.enumerated() {
            guard let program = command.first else { continue }
            guard let executable = Self.executable(program) else {
                try? FileManager.default.removeItem(atPath: directory)
                return "its build step \(index + 1) needs \(program), which is not installed"
            }
            let printed = await ChildProcess.capture(
                executable, Array(command.dropFirst()), limit: Self.stepLimit, environment: .inherit)
            log += "$ \(command.joined(separator: " "))\n\(printed?.output ?? "(no output)")\n"
            guard let printed, printed.status == 0 else {
                try? FileManager.default.removeItem(atPath: directory)
                let how = printed.map { "exit \($0.status)" } ?? "it did not finish in \(Self.stepLimit)"
                let last = printed?.output.split(separator: "\n").last.map(String.init) ?? ""
                return "its build step \(index + 1) (\(program)) failed (\(how))"
                    + (last.isEmpty ? "" : ": \(last.prefix(200))")
            }
        }
        guard FileManager.default.createFile(atPath: stamp, contents: Data(log.utf8)) else {
            return "its build stamp \(stamp) cannot be written"
        }
        return nil
    }

    /// `program` as a path: itself when it names one, else the first match on PATH.
    static func executable(_ program: String) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
