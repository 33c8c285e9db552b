import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `urlsession-conformance`: a reference client of the `rangecheck serve` protocol that downloads with URLSession,
/// for an iOS or macOS developer to copy into an app's test target.
///
///     urlsession-conformance --server http://127.0.0.1:8090 --client-label my-app [--scenario 'plain,kill-*']
///
/// It prints one line per scenario (`pass NAME`, `fail NAME: REASON`, `n/a NAME: REASON`) and a summary, and exits
/// 1 when any scenario failed, 2 for a usage or connection error. Its arguments are read by hand, not with
/// swift-argument-parser, so that it depends on Foundation and a SHA-256 only, as an app's code would.
@main
struct URLSessionConformance {
    static let usage = """
        usage: urlsession-conformance --server URL --client-label NAME [--scenario GLOB] [--scheme http|https|h2]
                                      [--token TOKEN] [--attempts N] [--include-slow] [--keep DIR]
        """

    static func main() async {
        do {
            let options = try Options(CommandLine.arguments.dropFirst())
            exit(try await run(options))
        } catch {
            FileHandle.standardError.write(Data("urlsession-conformance: \(error)\n".utf8))
            exit(2)
        }
    }

    static func run(_ options: Options) async throws -> Int32 {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let api = ConformanceAPI(server: options.server, token: options.token, session: session)
        let names = try await api.scenarios().filter { options.includeSlow || !($0.tags ?? []).contains("slow") }
            .map(\.name).filter { options.matches($0) }
        guard !names.isEmpty else {
            throw ConformanceAPI.Failure(description: "no scenario matches '\(options.scenario ?? "")'")
        }
        let work = options.keep ?? NSTemporaryDirectory() + "urlsession-conformance-\(UUID().uuidString)"
        defer { if options.keep == nil { try? FileManager.default.removeItem(atPath: work) } }
        let runner = ScenarioRunner(
            api: api, label: options.label, scheme: options.scheme, attempts: options.attempts,
            workDirectory: work, keepOutputs: options.keep != nil)
        var counts: [String: Int] = [:]
        var failed = 0
        for name in names {
            let verdict = try await runner.run(name)
            counts[verdict.label, default: 0] += 1
            if verdict.result == "fail" { failed += 1 }
            let reason = verdict.reason.map { $0.isEmpty ? "" : ": \($0)" } ?? ""
            say("\(verdict.label.padding(toLength: 4, withPad: " ", startingAt: 0)) \(name)\(reason)")
        }
        let graded = ["corrupt", "unsafe", "fail", "costly"].map { "\(counts[$0, default: 0]) \($0)" }
        say(
            "\(options.label): \(counts["pass", default: 0]) pass, \(graded.joined(separator: ", ")), "
                + "\(counts["n/a", default: 0]) n/a")
        return failed > 0 ? 1 : 0
    }

    /// Writes one line to stdout at once: a verdict shows as it comes, also into a pipe or a file, where `print`
    /// would buffer it.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The command line.
struct Options {
    var server: URL
    var label: String
    var scenario: String?
    var scheme = "http"
    var token: String?
    var attempts = 5
    var includeSlow = false
    /// Where each scenario's output is kept; nil: a temporary directory, removed as each verdict arrives.
    var keep: String?

    init(_ arguments: ArraySlice<String>) throws {
        var values: [String: String] = [:]
        var rest = arguments
        while let name = rest.popFirst() {
            if name == "--include-slow" {
                includeSlow = true
                continue
            }
            guard name.hasPrefix("--"), let value = rest.popFirst() else { throw Self.usage("unexpected '\(name)'") }
            values[String(name.dropFirst(2))] = value
        }
        guard let server = values.removeValue(forKey: "server").flatMap(URL.init(string:)), server.scheme != nil else {
            throw Self.usage("--server URL is required")
        }
        guard let label = values.removeValue(forKey: "client-label") else {
            throw Self.usage("--client-label is required")
        }
        self.server = server
        self.label = label
        scenario = values.removeValue(forKey: "scenario")
        token = values.removeValue(forKey: "token")
        if let scheme = values.removeValue(forKey: "scheme") {
            guard ["http", "https", "h2"].contains(scheme) else { throw Self.usage("--scheme is http, https or h2") }
            self.scheme = scheme
        }
        if let attempts = values.removeValue(forKey: "attempts") {
            guard let count = Int(attempts), count >= 1 else { throw Self.usage("--attempts is a positive number") }
            self.attempts = count
        }
        keep = values.removeValue(forKey: "keep")
        if let unknown = values.keys.sorted().first { throw Self.usage("unknown option --\(unknown)") }
    }

    /// Whether `name` matches `--scenario`: shell globs, comma-separated alternatives.
    func matches(_ name: String) -> Bool {
        guard let scenario else { return true }
        return scenario.split(separator: ",").contains { fnmatch(String($0), name, 0) == 0 }
    }

    private static func usage(_ problem: String) -> ConformanceAPI.Failure {
        ConformanceAPI.Failure(description: "\(problem)\n\(URLSessionConformance.usage)")
    }
}
