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
        let planned: [(url: String, destination: String)]
        do {
            planned = try destinations()
        } catch {
            printError("\(error)")
            return .failure
        }
        let outputDirectory = (LexicalPath.parent(planned[0].destination))
        let stateDirectory = command.state ?? outputDirectory + "/.rangefetch"
        let engine: DownloadEngine
        do {
            engine = try DownloadEngine(stateDirectory: stateDirectory, configuration: configuration)
        } catch {
            printError("\(error)")
            return .failure
        }
        for problem in engine.loadProblems { printError("warning: \(problem)") }

        let renderer = Renderer(mode: command.json ? .json : (isatty(STDOUT_FILENO) == 1 ? .terminal : .plain))
        let events = engine.events()
        let rendering = Task { await renderer.consume(events) }

        let interrupted = Interruption()
        let signals = [SIGINT, SIGTERM].map { signalNumber -> any DispatchSourceSignal in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                interrupted.set()
                Task { await engine.shutdown() }
            }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }

        let checksums =
            command.checksums.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }.map(
                parseChecksums) ?? [:]
        var ids: [(index: Int, id: DownloadTaskID)] = []
        var statuses = [ExitStatus?](repeating: nil, count: planned.count)
        for (index, item) in planned.enumerated() {
            let name = LexicalPath.lastComponent(item.destination)
            let expected = command.sha256 ?? checksums[name] ?? checksums[LexicalPath.lastComponent(urlPath(item.url))]
            do {
                let id = try await engine.add(
                    DownloadRequest(
                        url: item.url, destination: item.destination, sha256: expected, overwrite: command.overwrite))
                await renderer.name(id, name)
                ids.append((index, id))
            } catch let error as DownloadError {
                printError("\(item.url): \(error)")
                statuses[index] = ExitStatus.of(error)
            } catch {
                printError("\(item.url): \(error)")
                statuses[index] = .failure
            }
        }
        for (index, id) in ids {
            switch await engine.result(of: id) {
            case .completed: statuses[index] = .success
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
        if interrupted.isSet { return .interrupted }
        return statuses.compactMap { $0 }.first { $0 != .success } ?? .success
    }

    /// One destination per URL: the `-o` file for one URL, else `<dir>/<last path component>` (deduplicated).
    func destinations() throws -> [(url: String, destination: String)] {
        if command.urls.count == 1, let output = command.output, !output.hasSuffix("/"),
            !isDirectory(LexicalPath.absolute(output))
        {
            return [(command.urls[0], LexicalPath.absolute(output))]
        }
        let directory = LexicalPath.absolute(command.output ?? ".")
        var used: Set<String> = []
        return command.urls.map { url in
            var name = LexicalPath.lastComponent(urlPath(url))
            if name.isEmpty || name == "/" { name = "download" }
            var candidate = name
            var counter = 1
            while used.contains(candidate) {
                candidate = "\(name).\(counter)"
                counter += 1
            }
            used.insert(candidate)
            return (url, directory + "/" + candidate)
        }
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

/// Whether SIGINT or SIGTERM arrived, set from the signal source's queue.
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
