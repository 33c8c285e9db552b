import DownloadEngine
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of `rangefetch`: builds the engine from the parsed command, runs the downloads, renders their
/// events and turns the results into the exit status.
struct FetchRun {
    let command: RangeFetch
    let configuration: DownloadConfiguration

    func run() async -> ExitStatus {
        // Past RLIMIT_FSIZE a write must fail with EFBIG (a file-system error that keeps the partial file), not
        // kill the process with SIGXFSZ; without this it only survives when the write runs on a thread that
        // happens to block signals.
        signal(SIGXFSZ, SIG_IGN)
        let planned: [Planned]
        let outputDirectory: String
        do {
            (outputDirectory, planned) = try destinations()
        } catch {
            printError("\(error)")
            return .failure
        }
        let stateDirectory = command.state ?? outputDirectory + "/.rangefetch"

        // Before the engine: Ctrl-C must also end a wait for the state directory's lock, with nothing written.
        let interrupted = Interruption()
        let signals = [SIGINT, SIGTERM].map { signalNumber -> any DispatchSourceSignal in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { interrupted.set() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }

        let engine: DownloadEngine
        switch await openEngine(stateDirectory, interrupted: interrupted) {
        case .opened(let opened): engine = opened
        case .exit(let status): return status
        }
        if interrupted.attach(engine) {
            await engine.shutdown()
            return .interrupted
        }
        for problem in engine.loadProblems { printError("warning: \(problem)") }

        let renderer = Renderer(mode: command.json ? .json : (isatty(STDOUT_FILENO) == 1 ? .terminal : .plain))
        let events = engine.events()
        let rendering = Task { await renderer.consume(events) }

        let checksums =
            command.checksums.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }.map(
                parseChecksums) ?? [:]
        // Checked in `validate()` already.
        let headers = (try? command.requestHeaders()) ?? [:]
        var ids: [(index: Int, id: DownloadTaskID)] = []
        var statuses = [ExitStatus?](repeating: nil, count: planned.count)
        for (index, item) in planned.enumerated() {
            // With -J the name is not known yet: the URL's is shown (and matched in --checksums) until then.
            let name = item.name
            let expected =
                item.sha256 ?? command.sha256 ?? checksums[name]
                ?? checksums[LexicalPath.lastComponent(urlPath(item.url))]
            do {
                let id = try await engine.add(
                    DownloadRequest(
                        url: item.url, destination: item.destination, sha256: expected, overwrite: command.overwrite,
                        headers: headers, storesCredentials: command.storeCredentials,
                        namesFromResponse: item.namesFromResponse, revalidates: command.revalidate))
                await renderer.name(id, name)
                ids.append((index, id))
            } catch let error as DownloadError where DownloadError.credentialsRequired ~= error {
                printError("\(item.url): \(error); pass -H again (--store-credentials keeps credentials for next time)")
                statuses[index] = ExitStatus.of(error)
            } catch let error as DownloadError {
                printError("\(item.url): \(error)")
                statuses[index] = ExitStatus.of(error)
            } catch {
                printError("\(item.url): \(error)")
                statuses[index] = .failure
            }
        }
        var notModified: [(id: DownloadTaskID, path: String)] = []
        for (index, id) in ids {
            switch await engine.result(of: id) {
            case .completed(let path, _, _):
                statuses[index] = .success
                if await engine.snapshot(id)?.notModified == true { notModified.append((id, path)) }
            case .failed(let error):
                statuses[index] = ExitStatus.of(error)
                // Also on stderr, one line naming the URL: stdout may be a log file or JSON for a program, and a
                // failure must still reach the person who ran the command.
                printError("\(planned[index].url): \(error)")
            case .paused, .cancelled: statuses[index] = .interrupted
            }
        }
        await engine.shutdown()
        await rendering.value
        // After every event: the last word on a file the server said is current.
        for (id, path) in notModified { await renderer.notModified(id, path: path) }
        if interrupted.isSet { return .interrupted }
        return statuses.compactMap { $0 }.first { $0 != .success } ?? .success
    }

    /// Creates the engine; with `--wait-lock`, a state directory in use is polled until it is free (or the run is
    /// interrupted), else it is one line on stderr and exit code 1.
    private func openEngine(
        _ stateDirectory: String, interrupted: Interruption
    ) async -> OpenedEngine {
        var announced = false
        while true {
            do {
                return .opened(try DownloadEngine(stateDirectory: stateDirectory, configuration: configuration))
            } catch let error as DownloadError where DownloadError.stateDirectoryLocked ~= error {
                guard command.waitLock else {
                    printError("\(error.message) (use --wait-lock to wait)")
                    return .exit(.failure)
                }
                if !announced {
                    printError("\(error.message); waiting until it is free")
                    announced = true
                }
                // Polled: a blocking flock on a thread of its own could not be called off by Ctrl-C. 150 ms is
                // well under what a person notices and costs nothing.
                try? await Task.sleep(for: .milliseconds(150))
                if interrupted.isSet { return .exit(.interrupted) }
            } catch {
                printError("\(error)")
                return .exit(.failure)
            }
        }
    }

    /// What ``openEngine(_:interrupted:)`` came to: an engine, or the status to exit with.
    private enum OpenedEngine {
        case opened(DownloadEngine)
        case exit(ExitStatus)
    }

    /// One download of the run: a URL (of the arguments or the `-i` list) and where it goes.
    struct Planned {
        var url: String
        /// The file, or with `namesFromResponse` the directory the server names the file in.
        var destination: String
        var namesFromResponse = false
        /// The `-i` list's `checksum=`.
        var sha256: String?
        /// What progress lines call it: the file's name (the URL's while the server has not named it).
        var name: String
    }

    /// The downloads and their output directory: the `-o` file for one URL (given as an argument), else
    /// `<dir>/<out=>` for a list's URL with one, a directory named by the server with `-J`, or
    /// `<dir>/<last path component>` (deduplicated, and apart from every `out=`).
    func destinations() throws -> (directory: String, downloads: [Planned]) {
        // Checked in `validate()` already.
        let list = (try? command.inputList()) ?? nil
        let items: [(url: String, output: String?, sha256: String?)] =
            command.urls.map { ($0, nil, nil) } + (list?.entries.map { ($0.url, $0.output, $0.sha256) } ?? [])
        if list == nil, items.count == 1, !command.remoteHeaderName, let output = command.output,
            !output.hasSuffix("/"), !isDirectory(LexicalPath.absolute(output))
        {
            let file = LexicalPath.absolute(output)
            let download = Planned(url: items[0].url, destination: file, name: LexicalPath.lastComponent(file))
            return (LexicalPath.parent(file), [download])
        }
        let directory = LexicalPath.absolute(command.output ?? ".")
        var used = Set(items.compactMap(\.output))
        let downloads = items.map { item -> Planned in
            if let output = item.output {
                return Planned(
                    url: item.url, destination: directory + "/" + output, sha256: item.sha256,
                    name: LexicalPath.lastComponent(output))
            }
            if command.remoteHeaderName {
                return Planned(
                    url: item.url, destination: directory, namesFromResponse: true, sha256: item.sha256,
                    name: OutputName.fromURL(item.url) ?? "download")
            }
            var name = LexicalPath.lastComponent(urlPath(item.url))
            if name.isEmpty || name == "/" { name = "download" }
            var candidate = name
            var counter = 1
            while used.contains(candidate) {
                candidate = "\(name).\(counter)"
                counter += 1
            }
            used.insert(candidate)
            return Planned(
                url: item.url, destination: directory + "/" + candidate, sha256: item.sha256, name: candidate)
        }
        return (directory, downloads)
    }
}

func urlPath(_ url: String) -> String {
    URLComponents(string: url)?.path ?? ""
}

func isDirectory(_ path: String) -> Bool {
    var isDir: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && isDir.boolValue
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data(("rangefetch: " + line + "\n").utf8))
}

/// Whether SIGINT or SIGTERM arrived, set from the signal source's queue; once an engine is attached, a signal also
/// shuts it down (pausing its transfers).
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    private var engine: DownloadEngine?

    func set() {
        let engine = lock.withLock {
            value = true
            return self.engine
        }
        if let engine { Task { await engine.shutdown() } }
    }

    /// Attaches the engine a later signal shuts down; returns whether a signal came already (then ``set()`` did not
    /// see the engine, and the caller shuts it down).
    func attach(_ engine: DownloadEngine) -> Bool {
        lock.withLock {
            self.engine = engine
            return value
        }
    }

    var isSet: Bool { lock.withLock { value } }
}
