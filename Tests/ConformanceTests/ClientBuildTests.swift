import Conformance
import Foundation
import Subprocess
import TestSupport
import Testing

/// A definition's build step (`build`): run once per version into a directory named for its commands and the driver
/// files they name, before the column's first run; a failed step is one line and leaves nothing behind.
@Suite("Client build steps")
struct ClientBuildTests {
    /// A definition whose build writes a program printing `tool VERSION` and counts its runs in `counter`.
    static func definition(version: String, counter: String, fail: Bool = false) -> String {
        let script =
            fail
            ? "echo compiling; echo 'missing: libfoo' >&2; exit 3"
            : "echo run >> \(counter); printf '#!/bin/sh\\necho tool \(version) $(cat {client-dir}/driver.txt)\\n' "
                + "> {build-dir}/tool && chmod +x {build-dir}/tool && echo ${HOME:+home-set}"
        return """
            {"name": "mine", "description": "d", "program": "{build-dir}/tool", "version": ["--version"],
             "package": {"debian": "golang-go"},
             "build": [["sh", "-c", "\(script) # {client-dir}/driver.txt"]],
             "arguments": ["-o", "{output}", "{url}"]}
            """
    }

    /// Loads `text` as `mine.json` from a directory holding `driver.txt`, with builds under `root`.
    static func load(_ text: String, in directory: String, root: String) throws -> ClientDefinition {
        try Data(text.utf8).write(to: URL(fileURLWithPath: "\(directory)/mine.json"))
        var definition = try #require(try ClientDefinition.load(directory: directory).first)
        definition.buildRoot = root
        return definition
    }

    /// How many times the build ran.
    static func runs(_ counter: String) -> Int {
        ((try? String(contentsOfFile: counter, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// A definitions directory and a build root, fresh.
    static func scratch() throws -> (definitions: String, root: String) {
        (try temporary("defs"), try temporary("root"))
    }

    static func remove(_ paths: String...) {
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }

    static func temporary(_ label: String) throws -> String {
        let directory = NSTemporaryDirectory() + "client-build-\(label)-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test(
        "a build runs once per version: the program is there after it, a second start builds nothing, a new pin or driver is another directory"
    )
    func runsOncePerVersion() async throws {
        let (directory, root) = try Self.scratch()
        defer { Self.remove(directory, root) }
        try Data("driver-a".utf8).write(to: URL(fileURLWithPath: "\(directory)/driver.txt"))
        let counter = "\(root)/runs"
        let definition = try Self.load(Self.definition(version: "1.2.3", counter: counter), in: directory, root: root)
        let built = try #require(definition.buildDirectory)
        #expect(built.hasPrefix("\(root)/mine-"))
        #expect(definition.programPath == "\(built)/tool")
        #expect(definition.invocation.hasPrefix("BUILD/tool -o OUTPUT URL"), "\(definition.invocation)")
        #expect(!FileManager.default.fileExists(atPath: built))

        let client = definition.client()
        #expect(await client.unavailableReason() == nil)
        #expect(FileManager.default.isExecutableFile(atPath: "\(built)/tool"))
        #expect(await client.version() == "1.2.3")
        // The shell's own braces (`${HOME:+...}`) are left to the shell; the step ran with the user's environment.
        let stamp = try String(contentsOfFile: "\(built)/.rangecheck-built", encoding: .utf8)
        #expect(stamp.contains("home-set"), "\(stamp)")

        // Again, and as another harness would: nothing is built a second time.
        #expect(await definition.client().unavailableReason() == nil)
        #expect(Self.runs(counter) == 1)

        let repinned = try Self.load(Self.definition(version: "1.2.4", counter: counter), in: directory, root: root)
        #expect(repinned.buildDirectory != built)
        try Data("driver-b".utf8).write(to: URL(fileURLWithPath: "\(directory)/driver.txt"))
        let redriven = try Self.load(Self.definition(version: "1.2.3", counter: counter), in: directory, root: root)
        #expect(redriven.buildDirectory != built)
        #expect(redriven.buildDirectory != repinned.buildDirectory)
        #expect(await redriven.client().unavailableReason() == nil)
        #expect(Self.runs(counter) == 2)
    }

    @Test("--list builds nothing: a column not built yet is listed as to be built, with its package")
    func listingBuildsNothing() async throws {
        let (directory, root) = try Self.scratch()
        defer { Self.remove(directory, root) }
        try Data("d".utf8).write(to: URL(fileURLWithPath: "\(directory)/driver.txt"))
        let counter = "\(root)/runs"
        try Data(Self.definition(version: "2.0", counter: counter).utf8).write(
            to: URL(fileURLWithPath: "\(directory)/mine.json"))
        let listing = try await ChildProcess.start(
            BuiltProducts.rangecheck, ["--list", "--scenario", "", "--client-dir", directory, "--client", "mine"],
            environment: .inherit.updating(["RANGECHECK_BUILDS": root]))
        #expect(await listing.wait(limit: .seconds(60)) == .exited(0), "\(listing.errors)")
        let line = listing.output.split(separator: "\n").first { $0.hasPrefix("mine ") }.map(String.init) ?? ""
        #expect(
            line.hasPrefix(
                "mine (to be built: its build step runs before its first run) schemes: http https, package: apt-get "
                    + "install golang-go: BUILD/tool -o OUTPUT URL"), "\(listing.output)")
        #expect(Self.runs(counter) == 0)
    }

    @Test("a failed build step is one line naming the step and its last output; it leaves no directory and runs again")
    func failedStep() async throws {
        let (directory, root) = try Self.scratch()
        defer { Self.remove(directory, root) }
        try Data("d".utf8).write(to: URL(fileURLWithPath: "\(directory)/driver.txt"))
        let definition = try Self.load(
            Self.definition(version: "1", counter: "/dev/null", fail: true), in: directory, root: root)
        let built = try #require(definition.buildDirectory)
        for _ in 0..<2 {
            let reason = await definition.client().unavailableReason()
            #expect(reason == "its build step 1 (sh) failed (exit 3): missing: libfoo", "\(reason ?? "nil")")
            #expect(!FileManager.default.fileExists(atPath: built))
        }
        var missing = definition
        missing.build = ClientBuild(steps: [["no-such-compiler-here", "x"]])
        #expect(
            await missing.client().unavailableReason()
                == "its build step 1 needs no-such-compiler-here, which is not installed")
    }

    @Test(arguments: [
        (
            #""build": [["sh", "-c", "go build -o {biuld-dir}/x"]]"#,
            "mine.json:1:94: client.build: unknown placeholder {biuld-dir} (a build step knows {client-dir} and"
        ),
        (#""build": []"#, "mine.json:1:94: client.build: must be an array of commands"),
        (#""build": [[]]"#, "mine.json:1:94: client.build: must be an array of commands"),
        (#""build": "make""#, "mine.json:1:94: client.build: must be an array of commands"),
        (#""colour": 1"#, "mine.json:1:95: client.colour: unknown key"),
    ])
    func mistakesAreOneLine(member: String, prefix: String) throws {
        let text =
            #"{"name": "mine", "description": "d", "program": "{build-dir}/x", "version": ["-V"], "#
            + member + #", "package": {"pypi": "mine"}, "arguments": ["{url}"]}"#
        do {
            _ = try ClientDefinitionTests.load(text)
            Issue.record("accepted \(member)")
        } catch let error as ConformanceError {
            #expect(error.message.hasPrefix(prefix), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test("{build-dir} without a build step is refused in the program and in the arguments")
    func buildDirectoryNeedsABuild() throws {
        for (program, arguments, key) in [
            ("{build-dir}/x", #"["{url}"]"#, "client.program: uses {build-dir} without a build step"),
            ("x", #"["{build-dir}/driver.py", "{url}"]"#, "client.arguments: uses {build-dir} without a build step"),
        ] {
            let text =
                #"{"name": "mine", "description": "d", "program": ""# + program
                + #"", "version": ["-V"], "package": {"pypi": "mine"}, "arguments": "# + arguments + "}"
            do {
                _ = try ClientDefinitionTests.load(text)
                Issue.record("accepted \(program) \(arguments)")
            } catch let error as ConformanceError {
                #expect(error.message.contains(key), "\(error.message)")
            }
        }
    }
}
