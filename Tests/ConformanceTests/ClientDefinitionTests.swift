import Conformance
import Foundation
import RangeServer
import TestSupport
import Testing

/// Client definition files (fixtures/clients): the shipped ones give exactly the command lines of the Swift code they
/// replaced (`LegacyClients`), so the same verdicts; a mistake in a file is one line naming file, line, column and
/// key; `rangecheck --list` and `--client-dir` use them.
@Suite("Client definitions")
struct ClientDefinitionTests {
    static let shipped = ["curl", "wget", "wget2", "aria2c", "aria2c-x4", "axel", "axel-n4"]

    static func legacy(_ name: String) -> SubprocessClient {
        switch name {
        case "curl": LegacyClients.curl
        case "wget": LegacyClients.wget
        case "wget2": LegacyClients.wget2
        case "aria2c": LegacyClients.aria2c
        case "aria2c-x4": LegacyClients.aria2cSegmented
        case "axel": LegacyClients.axel
        default: LegacyClients.axelSegmented
        }
    }

    /// The jobs the harness makes: one file, several, a file the server names; with and without a CA, an
    /// Authorization and retries, with the row's timeouts.
    static var jobs: [ClientJob] {
        var jobs: [ClientJob] = []
        for count in [1, 3] {
            for named in [false, true] where !(named && count > 1) {
                for variant in 0..<4 {
                    var job = ClientJob(
                        transfers: (0..<count).map {
                            ClientJob.Transfer(
                                url: "http://127.0.0.1:9/scenario/s/run/f\($0)", output: "/w/out/f\($0).bin")
                        },
                        stateDirectory: "/w/state", logDirectory: "/w/logs", concurrency: 2,
                        idleTimeout: .seconds(variant == 2 ? 9 : 5))
                    job.namesFromServer = named
                    job.certificateAuthorityFile = variant % 2 == 1 ? "/w/tls/ca.pem" : nil
                    job.authorization = variant >= 2 ? "Bearer t" : nil
                    job.retries = [nil, 0, 5, nil][variant]
                    job.connectTimeout = .seconds(variant == 3 ? 7 : 5)
                    jobs.append(job)
                }
            }
        }
        return jobs
    }

    @Test("each shipped definition gives the arguments, environment, list file and steps of the code it replaced")
    func sameCommandLines() throws {
        let catalogue = try ClientCatalogue.shipped(root: BuiltProducts.repositoryRoot)
        // The replaced peers first, in their old column order; the columns added as files after them.
        #expect(Array(catalogue.definitions.map(\.name).prefix(Self.shipped.count)) == Self.shipped)
        for name in Self.shipped {
            let defined = try #require(catalogue.client(named: name) as? SubprocessClient)
            let old = Self.legacy(name)
            #expect(defined.program == old.program)
            #expect(defined.capabilities == old.capabilities, "\(name)")
            #expect(defined.transientExitCodes == old.transientExitCodes, "\(name)")
            #expect(defined.tlsLimitation == old.tlsLimitation, "\(name)")
            for job in Self.jobs {
                if job.transfers.count > 1, !old.capabilities.contains(.multipleFiles) { continue }
                if job.namesFromServer, !old.capabilities.contains(.serverNamedOutput) { continue }
                #expect(try defined.arguments(job) == old.arguments(job), "\(name): \(job)")
                #expect(defined.environment(job) == old.environment(job), "\(name)")
                #expect(defined.inputFiles(job) == old.inputFiles(job), "\(name)")
            }
        }
    }

    @Test(
        "curl and wget from their definitions give the verdicts of the code they replaced",
        .enabled(if: BuiltProducts.onPath("curl") != nil && BuiltProducts.onPath("wget") != nil))
    func sameVerdicts() async throws {
        for name in ["curl", "wget"] {
            for scenario in ["plain", "drop-then-resume", "version-change"] {
                let defined = try await HarnessClientTests.run(scenario, SubprocessClient.shipped(name))
                let old = try await HarnessClientTests.run(scenario, Self.legacy(name))
                #expect(defined.result == old.result, "\(name) on \(scenario)")
                #expect(defined.reasons == old.reasons, "\(name) on \(scenario)")
            }
        }
    }

    /// Loads a directory holding one definition, `text`, as `name.json`.
    static func load(_ text: String, name: String = "mine") throws -> [ClientDefinition] {
        let directory = NSTemporaryDirectory() + "client-definitions-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: "\(directory)/\(name).json"))
        do {
            return try ClientDefinition.load(directory: directory)
        } catch {
            // The directory is temporary: messages are checked from the file's name on.
            throw ConformanceError.invalidClientDefinition(
                error.message.replacingOccurrences(of: directory + "/", with: ""))
        }
    }

    static let minimal = #"""
        {"name": "mine", "description": "d", "program": "mine", "version": ["-V"], "package": {"pypi": "mine"},
         "arguments": ["-o", "{output}", "{url}"]}
        """#

    @Test(arguments: [
        (
            #""arguments": ["-o", "{outptu}", "{url}"]"#,
            "mine.json:2:22: client.arguments[1]: unknown placeholder {outptu} (known: {authorization}"
        ),
        (
            #""arguments": [["--ca", "{cafile}"], {"for": ["all"], "words": ["{url}"]}]"#,
            "mine.json:2:46: client.arguments[1].for: 'all' is not one, several or named"
        ),
        (#""arguments": ["{output}"]"#, "mine.json:2:15: client.arguments: has no {url} for a job of shape one"),
        (
            #""arguments": [{"words": ["{url}"], "each": ["{url}"]}]"#,
            "mine.json:2:16: client.arguments[0]: needs exactly one of words and each"
        ),
        (#""arguments": ["{url}"], "colour": "red""#, "mine.json:2:36: client.colour: unknown key (expected one of: "),
        (#""arguments": ["{url}"], "can": ["fly"]"#, "mine.json:2:33: client.can: 'fly' is not one of kill, prefill"),
        (
            #""arguments": ["{url}"], "transient": "7,300""#,
            "mine.json:2:39: client.transient: '300' is not an exit status"
        ),
        (#""arguments": ["{url}"], "can": ["named-output"]"#, ""),
        (
            #""arguments": ["{url}", "{output}"], "can": ["named-output"]"#,
            "mine.json:2:15: client.arguments: gives {output} to a job named by the server"
        ),
        (
            #""arguments": ["-i", "{list-file}", "{url}"]"#,
            "mine.json:2:15: client.arguments: uses {list-file} without a list-file"
        ),
    ])
    func mistakesAreOneLineAtTheKey(arguments: String, prefix: String) throws {
        let text = Self.minimal.replacingOccurrences(of: #""arguments": ["-o", "{output}", "{url}"]"#, with: arguments)
        if prefix.isEmpty {
            #expect(try Self.load(text).first?.capabilities == [.serverNamedOutput])
            return
        }
        do {
            _ = try Self.load(text)
            Issue.record("accepted \(arguments)")
        } catch let error as ConformanceError {
            #expect(error.message.hasPrefix(prefix), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    @Test("a definition without a package, or with one from elsewhere, is one line at the key")
    func packageIsRequired() throws {
        for (package, location) in [("", "mine.json:1:1"), (#", "package": {"brew": "mine"}"#, "mine.json:1:87")] {
            let text = Self.minimal.replacingOccurrences(of: #", "package": {"pypi": "mine"}"#, with: package)
            do {
                _ = try Self.load(text)
                Issue.record("accepted \(package)")
            } catch let error as ConformanceError {
                #expect(error.message.hasPrefix(location), "\(error.message)")
                #expect(error.message.contains(#"client.package: must be {"debian": NAME} or {"pypi": NAME}"#))
            }
        }
    }

    @Test("a file whose name is not its client's, and a definition named like a Swift column, are refused")
    func namesAreTheFiles() throws {
        #expect(
            throws: ConformanceError.invalidClientDefinition("other.json: client.name: 'mine' is not the file's name")
        ) { try Self.load(Self.minimal, name: "other") }
        let directory = NSTemporaryDirectory() + "client-definitions-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = Self.minimal.replacingOccurrences(of: #""name": "mine""#, with: #""name": "engine""#)
        try Data(engine.utf8).write(to: URL(fileURLWithPath: "\(directory)/engine.json"))
        #expect(throws: ConformanceError.self) { try ClientCatalogue.loadDefinitions([directory]) }
        do {
            _ = try ClientCatalogue.loadDefinitions([directory])
        } catch {
            #expect(error.message.hasSuffix("'engine' is a column written in Swift; name the definition otherwise"))
        }
    }

    @Test("the invocation is drawn from the template; the version is the first dotted number printed")
    func invocationAndVersion() async throws {
        let curl = SubprocessClient.shipped("curl")
        #expect(
            curl.invocation.hasPrefix("curl --silent --show-error --fail --location --max-redirs 10 --continue-at -"))
        #expect(curl.invocation.contains("[--cacert CA] [--header 'Authorization: AUTH'] --output OUTPUT URL"))
        #expect(curl.invocation.contains("(named by the server: … --max-redirs 10 --retry 3"))
        #expect(curl.invocation.hasSuffix("; re-run on exit 28"))
        #expect(SubprocessClient.shipped("axel").invocation.hasPrefix("[SSL_CERT_FILE=CA] axel --quiet"))
        #expect(SubprocessClient.versionNumber(in: "curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1") == "7.88.1")
        #expect(SubprocessClient.versionNumber(in: "GNU Wget2 1.99.1 - multithreaded") == "1.99.1")
        #expect(SubprocessClient.versionNumber(in: "2025.10.22") == "2025.10.22")
        #expect(SubprocessClient.versionNumber(in: "version 2 of 3.") == nil)
        // Not under a sanitizer (time scale above 1): there the whole suite starves the cooperative pool, and a version
        // command's answer has come later than its 30 s.
        if BuiltProducts.onPath("curl") != nil, testTimeScale == 1 {
            let version = try #require(await curl.version())
            #expect(version.split(separator: ".").count >= 2, "\(version)")
        }
    }

    @Test("--client-dir adds a column that --list shows with its version and package; a broken file is one line, 64")
    func clientDirectory() async throws {
        let directory = NSTemporaryDirectory() + "client-dir-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mine = Self.minimal.replacingOccurrences(of: #""program": "mine""#, with: #""program": "curl""#)
            .replacingOccurrences(of: #""version": ["-V"]"#, with: #""version": ["--version"]"#)
        try Data(mine.utf8).write(to: URL(fileURLWithPath: "\(directory)/mine.json"))
        let listing = try await ChildProcess.start(
            BuiltProducts.rangecheck, ["--list", "--scenario", "", "--client-dir", directory, "--client", "mine"])
        #expect(await listing.wait(limit: .seconds(60)) == .exited(0), "\(listing.errors)")
        let line = listing.output.split(separator: "\n").first { $0.hasPrefix("mine ") }.map(String.init) ?? ""
        if BuiltProducts.onPath("curl") != nil {
            #expect(line.hasPrefix("mine (available) version "), "\(listing.output)")
        }
        #expect(line.contains("package: pip install mine: curl -o OUTPUT URL; never re-run"), "\(line)")
        // A definition that names no protocols speaks HTTP/1.1: judged over http and https only.
        #expect(line.contains("schemes: http https, package: "), "\(line)")

        try Data("{\"name\": \"mine\",\n \"program\": 3}".utf8).write(
            to: URL(fileURLWithPath: "\(directory)/mine.json"))
        let broken = try await ChildProcess.start(
            BuiltProducts.rangecheck, ["--list", "--scenario", "", "--client-dir", directory])
        #expect(await broken.wait(limit: .seconds(60)) == .exited(64))
        #expect(broken.errors.hasPrefix("Error: \(directory)/mine.json:"), "\(broken.errors)")
        #expect(broken.errors.contains(": client."), "\(broken.errors)")
    }

    @Test("an installed rangecheck finds the catalogue and the client definitions in PREFIX/share/rangecheck")
    func installedCatalogue() async throws {
        let prefix = NSTemporaryDirectory() + "rangecheck-prefix-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let manager = FileManager.default
        // As scripts/install lays it out.
        try manager.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: prefix + "/share/rangecheck", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: prefix + "/elsewhere", withIntermediateDirectories: true)
        try manager.copyItem(atPath: BuiltProducts.rangecheck, toPath: prefix + "/bin/rangecheck")
        for part in ["scenarios", "files", "clients"] {
            try manager.copyItem(
                atPath: BuiltProducts.repositoryRoot + "/fixtures/" + part, toPath: prefix + "/share/rangecheck/" + part
            )
        }
        let listing = try await ChildProcess.start(
            prefix + "/bin/rangecheck", ["--list", "--scenario", "plain", "--client", "gdown"],
            directory: prefix + "/elsewhere")
        #expect(await listing.wait(limit: .seconds(60)) == .exited(0), "\(listing.errors)")
        #expect(listing.output.hasPrefix("plain: "), "\(listing.output)")
        #expect(
            listing.output.contains(prefix + "/share/rangecheck/clients/drivers/gdown_driver.py"), "\(listing.output)")
    }

    @Test(
        "a run records each column's version, and every report shows it beside the column",
        .enabled(if: BuiltProducts.onPath("curl") != nil && testTimeScale == 1, "not under a sanitizer's time scale"))
    func versionsInReports() async throws {
        var options = MatrixRunner.Options.forTests
        options.scenarioPattern = "plain"
        let matrix = try await MatrixRunner.run(clients: [SubprocessClient.shipped("curl")], options: options)
        let version = try #require(matrix.versions["curl"])
        #expect(version.split(separator: ".").count >= 2, "\(version)")
        #expect(Report.terminal(matrix).hasPrefix("columns: curl \(version)\n"))
        #expect(Report.markdown(matrix).contains("Columns run: curl \(version)"))
        #expect(Report.json(matrix).contains("\"versions\" : {\n    \"curl\" : \"\(version)\""))
        #expect(Report.html(matrix).contains("<b>curl</b> \(version):"))
    }
}
