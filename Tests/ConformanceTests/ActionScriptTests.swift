import Foundation
import Subprocess
import TestSupport
import Testing

/// What a GitHub runner gives the action's script: a workspace, a temporary directory, and the files the step
/// summary and the outputs are appended to, all in a scratch directory of the test's own.
private struct RunnerEnvironment {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "rangecheck-action-" + UUID().uuidString
        for sub in ["workspace", "temp"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true)
        }
        for file in ["summary.md", "output.txt"] {
            _ = FileManager.default.createFile(atPath: directory + "/" + file, contents: nil)
        }
    }

    /// The variables a runner sets for a composite action's step, and the inputs as action.yml passes them.
    func variables(inputs: [String: String]) -> [Environment.Key: String?] {
        var variables: [Environment.Key: String?] = [
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": BuiltProducts.repositoryRoot,
            "GITHUB_WORKSPACE": directory + "/workspace",
            "GITHUB_STEP_SUMMARY": directory + "/summary.md",
            "GITHUB_OUTPUT": directory + "/output.txt",
            "RUNNER_TEMP": directory + "/temp",
            // The rangecheck the test target was built with, so the script does not build one for minutes.
            "RANGECHECK_BIN": BuiltProducts.rangecheck,
        ]
        for (name, value) in inputs {
            variables[.init(stringLiteral: "INPUT_" + name.uppercased().replacingOccurrences(of: "-", with: "_"))] =
                value
        }
        return variables
    }

    var summary: String { (try? String(contentsOfFile: directory + "/summary.md", encoding: .utf8)) ?? "" }

    /// The `NAME=VALUE` lines the script appended to `GITHUB_OUTPUT`.
    var outputs: [String: String] {
        let text = (try? String(contentsOfFile: directory + "/output.txt", encoding: .utf8)) ?? ""
        var outputs: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            outputs[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return outputs
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// `scripts/rangecheck-action`, the work of the reusable action (action.yml), run locally as a runner would run it.
@Suite("scripts/rangecheck-action", .serialized)
struct ActionScriptTests {
    static let curl = "curl -sS -f -C - -o {output} {url}"

    /// The script's exit status and what it wrote on stderr.
    private typealias ScriptExit = (status: Int32, errors: String)

    /// Runs the script with `inputs` (`client-command`, `tls`, ...); returns its exit status and stderr.
    private static func run(_ inputs: [String: String], in runner: RunnerEnvironment) async throws -> ScriptExit {
        let environment = Environment.inherit.updating(runner.variables(inputs: inputs))
        let child = try await ChildProcess.start(
            BuiltProducts.repositoryRoot + "/scripts/rangecheck-action", [], directory: runner.directory + "/workspace",
            environment: environment)
        let status = try #require(await child.wait(limit: .seconds(300)), "the action script did not finish")
        return (ChildProcess.code(status), child.errors)
    }

    @Test(
        "a client that passes: exit 0, the matrix in the summary, reports left for upload",
        .enabled(if: BuiltProducts.onPath("curl") != nil, "needs curl"))
    func aPassingClient() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.rangecheck), "build rangecheck first")
        let runner = try RunnerEnvironment()
        defer { runner.remove() }
        let (status, errors) = try await Self.run(
            ["client-command": Self.curl, "client-name": "my-curl", "scenario": "plain"], in: runner)
        #expect(status == 0, "\(errors)")
        #expect(runner.summary.contains("## rangecheck: my-curl (pass)"))
        #expect(runner.summary.contains("| scenario (http) | my-curl |"))
        #expect(runner.summary.contains("| plain | pass |"))
        let outputs = runner.outputs
        #expect(outputs["result"] == "pass")
        #expect(outputs["passed"] == "1")
        #expect(outputs["failed"] == "0")
        #expect(outputs["reports-directory"] == runner.directory + "/temp/rangecheck")
        for name in ["markdown", "junit", "html", "json"] {
            let path = try #require(outputs[name], "no \(name) output")
            #expect(path.hasPrefix(runner.directory + "/temp/rangecheck/"))
            #expect(FileManager.default.fileExists(atPath: path), "\(name) report missing at \(path)")
        }
        let junit = try String(contentsOfFile: try #require(outputs["junit"]), encoding: .utf8)
        #expect(junit.contains("<testsuite"))
        let html = try String(contentsOfFile: try #require(outputs["html"]), encoding: .utf8)
        #expect(html.contains("<html"))
    }

    @Test(
        "a client that fails a scenario fails the step (curl sends no If-Range: version-change)",
        .enabled(if: BuiltProducts.onPath("curl") != nil, "needs curl"))
    func aFailingClient() async throws {
        let runner = try RunnerEnvironment()
        defer { runner.remove() }
        let (status, errors) = try await Self.run(
            ["client-command": Self.curl, "client-name": "my-curl", "scenario": "plain,version-change"], in: runner)
        #expect(status == 1, "\(errors)")
        #expect(
            errors.contains("rangecheck-action: my-curl: 1 pass, 0 corrupt, 0 unsafe, 1 fail, 0 costly, 0 n/a"),
            "\(errors)")
        #expect(runner.summary.contains("## rangecheck: my-curl (fail)"))
        // curl stops at the drop (exit 18) and the action runs it once: no output, graded fail.
        #expect(runner.summary.contains("| version-change | **FAIL**: "))
        #expect(runner.outputs["result"] == "fail")
        #expect(runner.outputs["failed"] == "1")
        let json = try #require(runner.outputs["json"])
        #expect(FileManager.default.fileExists(atPath: try #require(runner.outputs["junit"])))

        // Day one in the client's CI: that report, committed as the baseline, makes the same run pass.
        try FileManager.default.copyItem(atPath: json, toPath: runner.directory + "/workspace/baseline.json")
        let inputs = ["client-command": Self.curl, "client-name": "my-curl", "scenario": "plain,version-change"]
        let adopted = try await Self.run(inputs.merging(["baseline": "baseline.json"]) { $1 }, in: runner)
        #expect(adopted.0 == 0, "\(adopted.1)")
        // A threshold above the grade passes too; a threshold that is no grade is a bad input.
        #expect(try await Self.run(inputs.merging(["gate-at": "corrupt"]) { $1 }, in: runner).0 == 0)
        let bad = try await Self.run(inputs.merging(["gate-at": "awful"]) { $1 }, in: runner)
        #expect(bad.0 == 2 && bad.1.contains("input gate-at: 'awful' is not corrupt, fail, unsafe or costly"))
    }

    @Test("a command that is not installed fails the step: a skipped column is no pass")
    func aMissingProgram() async throws {
        let runner = try RunnerEnvironment()
        defer { runner.remove() }
        let (status, errors) = try await Self.run(
            ["client-command": "/nonexistent/tool -o {output} {url}", "scenario": "plain"], in: runner)
        #expect(status == 1, "\(errors)")
        #expect(errors.contains("rangecheck-action: client: skipped (/nonexistent/tool is not installed"), "\(errors)")
        #expect(runner.outputs["result"] == "fail")
    }

    @Test(
        "bad input: one line naming the input, exit 2",
        arguments: [
            (["client-command": ""], "input client-command: empty"),
            (["client-command": "curl -o {output}"], "input client-command: 'curl -o {output}' has no {url}"),
            (["client-command": "curl {url}"], "input client-command: 'curl {url}' has no {output}"),
            (["client-command": curl, "tls": "yes"], "input tls: expected true or false, got 'yes'"),
            (["client-command": curl, "include-slow": "1"], "input include-slow: expected true or false, got '1'"),
            (["client-command": curl, "scenario": "no-such-*"], "input scenario: 'no-such-*' matches no scenario"),
            (["client-command": curl, "client-name": "curl"], "input client-name: 'curl' is a built-in client"),
        ])
    func badInput(inputs: [String: String], message: String) async throws {
        let runner = try RunnerEnvironment()
        defer { runner.remove() }
        let (status, errors) = try await Self.run(inputs, in: runner)
        #expect(status == 2)
        let lines = errors.split(separator: "\n").filter { $0.hasPrefix("rangecheck-action:") }
        #expect(lines.count == 1 && lines[0].hasPrefix("rangecheck-action: " + message), "\(errors)")
    }

    @Test("action.yml: a composite action whose inputs reach the script and whose outputs the script writes")
    func actionDefinition() throws {
        let root = BuiltProducts.repositoryRoot
        let yaml = try String(contentsOfFile: root + "/action.yml", encoding: .utf8)
        let script = try String(contentsOfFile: root + "/scripts/rangecheck-action", encoding: .utf8)
        let sections = ActionDefinition(yaml)
        #expect(sections.keys(under: "runs").contains("using"))
        #expect(yaml.contains("\n  using: composite\n"))
        #expect(yaml.contains("      shell: bash\n"))
        #expect(yaml.contains("      run: '\"$GITHUB_ACTION_PATH/scripts/rangecheck-action\"'\n"))
        let inputs = sections.keys(under: "inputs")
        #expect(["client-command", "scenario", "tls", "include-slow"].allSatisfy(inputs.contains), "\(inputs)")
        for input in inputs {
            let variable = "INPUT_" + input.uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(yaml.contains("        \(variable): ${{ inputs.\(input) }}\n"), "\(input) is not passed on")
            #expect(script.contains("${\(variable):-"), "the script does not read \(variable)")
        }
        let outputs = sections.keys(under: "outputs")
        #expect(["result", "junit", "html", "markdown"].allSatisfy(outputs.contains), "\(outputs)")
        for output in outputs {
            #expect(yaml.contains("    value: ${{ steps.rangecheck.outputs.\(output) }}\n"), "\(output)")
            #expect(script.contains("\(output)=%s"), "the script does not write the output \(output)")
        }
        // Tabs are not YAML indentation, and every key sits at an even indentation.
        for line in yaml.split(separator: "\n") {
            #expect(!line.contains("\t"))
            #expect(line.prefix { $0 == " " }.count % 2 == 0, "odd indentation: \(line)")
        }
    }

    @Test("the workflow example in docs/conformance.md uses only the action's inputs and outputs")
    func documentedWorkflow() throws {
        let root = BuiltProducts.repositoryRoot
        let inputs = ActionDefinition(try String(contentsOfFile: root + "/action.yml", encoding: .utf8))
        let docs = try String(contentsOfFile: root + "/docs/conformance.md", encoding: .utf8)
        let lines = docs.split(separator: "\n", omittingEmptySubsequences: false)
        let uses = try #require(lines.firstIndex { $0.hasSuffix("uses: OWNER/rangeserver@TAG") }, "no workflow example")
        // The `with:` keys of that step: the lines indented deeper than `with:` up to the next step.
        let with = try #require(lines[uses...].firstIndex { $0.trimmingCharacters(in: .whitespaces) == "with:" })
        let indent = lines[with].prefix { $0 == " " }.count
        let keys = lines[(with + 1)...].prefix { $0.prefix { $0 == " " }.count > indent }.map {
            String($0.trimmingCharacters(in: .whitespaces).prefix { $0 != ":" })
        }
        #expect(keys.contains("client-command"))
        for key in keys {
            #expect(inputs.keys(under: "inputs").contains(key), "the example sets an unknown input \(key)")
        }
        for line in lines where line.contains("steps.rangecheck.outputs.") {
            let name = line.components(separatedBy: "steps.rangecheck.outputs.")[1].prefix { $0 != " " && $0 != "}" }
            #expect(inputs.keys(under: "outputs").contains(String(name)), "the example reads an unknown output \(name)")
        }
    }
}

/// The keys of action.yml's top-level sections, read by indentation: Foundation has no YAML parser, and this is
/// all the test needs of one (the file's shape is fixed by GitHub's action metadata syntax).
private struct ActionDefinition {
    private var sections: [String: [String]] = [:]

    init(_ text: String) {
        var section = ""
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            if let key = Self.key(line, indent: 0) {
                section = key
                sections[section] = []
            } else if let key = Self.key(line, indent: 2) {
                sections[section, default: []].append(key)
            }
        }
    }

    /// The keys indented by two spaces under the top-level key `section`.
    func keys(under section: String) -> [String] { sections[section] ?? [] }

    /// The key of a `KEY:` line at exactly `indent` spaces, or nil.
    private static func key(_ line: Substring, indent: Int) -> String? {
        let body = line.dropFirst(indent)
        guard line.prefix(indent).allSatisfy({ $0 == " " }), let first = body.first, first != " ", first != "-",
            let colon = body.firstIndex(of: ":")
        else { return nil }
        return String(body[..<colon])
    }
}
