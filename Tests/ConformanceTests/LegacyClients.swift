import Conformance
import Foundation

/// The peers as they were written in Swift before they moved into definition files (`fixtures/clients/*.json`),
/// kept as the reference the definitions are checked against (`ClientDefinitionTests`): for every job shape the
/// harness makes, a definition must give the same program, arguments, environment and list file as the code it
/// replaced, so its verdicts cannot differ.
enum LegacyClients {
    static func seconds(_ duration: Duration) -> Int { max(1, Int(duration.components.seconds)) }

    /// `[flag, FILE]` when the job has a CA file, else nothing.
    static func trust(_ job: ClientJob, _ flag: String) -> [String] {
        job.certificateAuthorityFile.map { [flag, $0] } ?? []
    }

    /// `[flag, "Authorization: VALUE"]` when the job has an Authorization, else nothing.
    static func authorization(_ job: ClientJob, _ flag: String) -> [String] {
        job.authorization.map { [flag, "Authorization: \($0)"] } ?? []
    }

    /// `[flag=Authorization: VALUE]` when the job has an Authorization, else nothing.
    static func authorization(_ job: ClientJob, joined flag: String) -> [String] {
        job.authorization.map { ["\(flag)=Authorization: \($0)"] } ?? []
    }

    /// `[flag=FILE]` when the job has a CA file, else nothing.
    static func trust(_ job: ClientJob, joined flag: String) -> [String] {
        job.certificateAuthorityFile.map { ["\(flag)=\($0)"] } ?? []
    }

    /// `curl -sS -f -L --max-redirs 10 -C - --retry 3 --connect-timeout 5 --speed-limit 1 --speed-time IDLE
    /// [--cacert CA] -o OUTPUT URL` (with several files: `--parallel --parallel-max N` and one `-o OUTPUT URL` pair
    /// per file).
    /// Re-run on exit 28 (operation timeout) only: curl's manual calls "a timeout" transient (`--retry`); of its exit
    /// codes that is the one that never stands for a permanent error too.
    ///
    /// A row whose client names its output from the server (`output-names`) gets `-O -J --output-dir DIR URL`
    /// instead of `-o OUTPUT URL`, and no `-C -`: curl refuses to combine `--continue-at` with
    /// `--remote-header-name`, so it cannot resume such a download.
    static let curl = SubprocessClient(
        name: "curl", program: "curl",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "curl -sS -f -L --max-redirs 10 -C - --retry 3 --connect-timeout 5 --speed-limit 1 "
            + "--speed-time 5 [--cacert CA] [-H 'Authorization: AUTH'] -o OUTPUT URL (named by the server: "
            + "-O -J --output-dir DIR URL, without -C -); re-run on exit 28; a row's connect-timeout and "
            + "retries replace 5 and 3",
        transientExitCodes: [28]
    ) { job in
        var arguments = ["--silent", "--show-error", "--fail", "--location", "--max-redirs", "10"]
        if !job.namesFromServer { arguments += ["--continue-at", "-"] }
        arguments += [
            "--retry", String(job.retries ?? 3), "--connect-timeout", String(seconds(job.connectTimeout)),
            "--speed-limit", "1", "--speed-time",
            String(seconds(job.idleTimeout)),
        ]
        arguments += trust(job, "--cacert") + authorization(job, "--header")
        if job.transfers.count > 1 { arguments += ["--parallel", "--parallel-max", String(job.concurrency)] }
        for transfer in job.transfers {
            arguments +=
                job.namesFromServer
                ? ["--remote-name", "--remote-header-name", "--output-dir", transfer.directory, transfer.url]
                : ["--output", transfer.output, transfer.url]
        }
        return arguments
    }

    /// `wget -nv -c --tries=3 --waitretry=1 --timeout=IDLE --connect-timeout=5 --max-redirect=10
    /// --retry-on-http-error=429,500,502,503,504 [--ca-certificate=CA] -O OUTPUT URL` (with several files: `-P DIR` and the URLs,
    /// fetched one after the other). Re-run on exit 4 ("Network failure" in wget's manual), whose `--continue` is
    /// documented for finishing "a download started by a previous instance of Wget".
    static let wget = SubprocessClient(
        name: "wget", program: "wget",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "wget -nv -c --tries=3 --waitretry=1 --timeout=5 --connect-timeout=5 --max-redirect=10 "
            + "--retry-on-http-error=429,500,502,503,504 [--ca-certificate=CA] [--header='Authorization: AUTH'] -O OUTPUT URL (named by the server: "
            + "--content-disposition -P DIR URL); re-run on exit 4; a row's "
            + "connect-timeout replaces 5, its retries N give N + 1 tries",
        transientExitCodes: [4]
    ) { job in
        let arguments = [
            "--no-verbose", "--continue", "--tries=\((job.retries ?? 2) + 1)", "--waitretry=1",
            "--timeout=\(seconds(job.idleTimeout))", "--connect-timeout=\(seconds(job.connectTimeout))",
            "--max-redirect=10", "--retry-on-http-error=429,500,502,503,504",
        ]
        return arguments + trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            + wgetOutputs(job)
    }

    /// wget's and wget2's tail: `-O OUTPUT URL` for one file, `-P DIR URL...` for several (named by the URL), and
    /// `--content-disposition -P DIR URL` for a file the server names.
    static func wgetOutputs(_ job: ClientJob) -> [String] {
        if job.namesFromServer {
            return ["--content-disposition", "--directory-prefix", job.transfers[0].directory, job.transfers[0].url]
        }
        if job.transfers.count == 1 { return ["--output-document", job.transfers[0].output, job.transfers[0].url] }
        let directory = (job.transfers[0].output as NSString).deletingLastPathComponent
        return ["--directory-prefix", directory] + job.transfers.map(\.url)
    }

    /// `aria2c -c -x1 -s1 --file-allocation=none --auto-file-renaming=false --max-tries=3 --retry-wait=1
    /// --timeout=IDLE --connect-timeout=5 --max-file-not-found=1 [--ca-certificate=CA] -d DIR -o NAME URL` (with several files:
    /// `-i LIST -j N`). Re-run on exit 2, 6 and 29 (aria2c's manual: "time out", "network problem", and a server
    /// "unable to handle the request due to a temporary overloading or maintenance"); not on 7, unfinished downloads
    /// after a Ctrl-C, TERM or INT, which the harness never sends.
    static let aria2c = aria2c(name: "aria2c", connections: 1)

    /// The segmented aria2c column: like `aria2c`, with `-x4 -s4 -k1M`, so one file is fetched over up to four
    /// connections in 1 MiB pieces and resumed from its `.aria2` control file (which records no validator).
    static let aria2cSegmented = aria2c(name: "aria2c-x4", connections: 4)

    /// An aria2c column fetching each file over `connections` connections.
    static func aria2c(name: String, connections: Int) -> SubprocessClient {
        let split = connections == 1 ? "-x1 -s1" : "-x\(connections) -s\(connections) -k1M"
        var capabilities: ClientCapabilities = [
            .killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput,
        ]
        if connections > 1 { capabilities.insert(.segmented) }
        return SubprocessClient(
            name: name, program: "aria2c", capabilities: capabilities,
            invocation: "aria2c -c \(split) --file-allocation=none --auto-file-renaming=false --max-tries=3 "
                + "--retry-wait=1 --timeout=5 --connect-timeout=5 --max-file-not-found=1 [--ca-certificate=CA] "
                + "[--header='Authorization: AUTH'] -d DIR -o NAME URL (named by the server: no -o); "
                + "re-run on exit 2/6/29; a row's connect-timeout replaces 5, its retries N give N + 1 tries",
            transientExitCodes: [2, 6, 29],
            inputFiles: { job in
                job.transfers.count > 1 ? ["\(job.stateDirectory)/aria2c-input.txt": aria2cInputList(job)] : [:]
            }
        ) { job in
            var arguments = [
                "--continue=true", "--max-connection-per-server=\(connections)", "--split=\(connections)",
                "--file-allocation=none", "--auto-file-renaming=false", "--max-tries=\((job.retries ?? 2) + 1)",
                "--retry-wait=1", "--timeout=\(seconds(job.idleTimeout))",
                "--connect-timeout=\(seconds(job.connectTimeout))", "--max-file-not-found=1",
                "--summary-interval=0", "--console-log-level=warn", "--download-result=hide",
            ]
            if connections > 1 { arguments.append("--min-split-size=1M") }
            arguments += trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            if job.namesFromServer {
                // Without --out aria2c takes the name from Content-Disposition, else from the URL.
                arguments += ["--dir", job.transfers[0].directory, job.transfers[0].url]
            } else if job.transfers.count == 1 {
                let output = job.transfers[0].output as NSString
                arguments += [
                    "--dir", output.deletingLastPathComponent, "--out", output.lastPathComponent, job.transfers[0].url,
                ]
            } else {
                arguments += [
                    "--input-file", "\(job.stateDirectory)/aria2c-input.txt", "--max-concurrent-downloads",
                    String(job.concurrency),
                ]
            }
            return arguments
        }
    }

    /// aria2c's `--input-file` for several files: each URL, then its `dir=` and `out=` options indented.
    static func aria2cInputList(_ job: ClientJob) -> String {
        job.transfers.map { transfer in
            let output = transfer.output as NSString
            return "\(transfer.url)\n  dir=\(output.deletingLastPathComponent)\n  out=\(output.lastPathComponent)\n"
        }.joined()
    }

    /// `wget2 -q -c --tries=3 --waitretry=1 --timeout=IDLE --connect-timeout=5 --max-redirect=10
    /// [--ca-certificate=CA] -O OUTPUT URL`
    /// (with several files: `-P DIR` and the URLs). wget2 1.99 has no `--retry-on-http-error`. Re-run on exit 4
    /// ("Network failure" in wget2's manual, as in wget's).
    static let wget2 = SubprocessClient(
        name: "wget2", program: "wget2",
        capabilities: [.killAndRestart, .prefilledOutput, .multipleFiles, .authorization, .serverNamedOutput],
        invocation: "wget2 -q -c --tries=3 --waitretry=1 --timeout=5 --connect-timeout=5 --max-redirect=10 "
            + "[--ca-certificate=CA] [--header='Authorization: AUTH'] -O OUTPUT URL (named by the server: "
            + "--content-disposition -P DIR URL, run in DIR); re-run on exit 4; a row's connect-timeout replaces 5, its "
            + "retries N give N + 1 tries",
        transientExitCodes: [4]
    ) { job in
        let arguments = [
            "--quiet", "--continue", "--tries=\((job.retries ?? 2) + 1)", "--waitretry=1",
            "--timeout=\(seconds(job.idleTimeout))", "--connect-timeout=\(seconds(job.connectTimeout))",
            "--max-redirect=10",
        ]
        return arguments + trust(job, joined: "--ca-certificate") + authorization(job, joined: "--header")
            + wgetOutputs(job)
    }

    /// `axel -q -n 1 -T IDLE --max-redirect=10 -o OUTPUT URL`. axel resumes only from its own `OUTPUT.st` state
    /// file, so a prefilled output is n/a; one file per run (several URLs are mirrors to axel). Never re-run: its
    /// manual gives 1 for "something really went wrong" (every failure, a certificate error as much as a dropped
    /// connection) and 2 for an interrupted download, which only a signal the harness never sends makes. axel 2.17
    /// has no CA option (only `--insecure`), but it loads OpenSSL's default trust
    /// (`SSL_CTX_set_default_verify_paths`), so the CA file is given as `SSL_CERT_FILE` in its environment.
    static let axel = axel(name: "axel", connections: 1)

    /// The segmented axel column: `axel -n 4`, whose state file records the segments' offsets but no validator.
    static let axelSegmented = axel(name: "axel-n4", connections: 4)

    /// An axel column fetching each file over `connections` connections.
    static func axel(name: String, connections: Int) -> SubprocessClient {
        SubprocessClient(
            name: name, program: "axel",
            capabilities: connections > 1
                ? [.killAndRestart, .segmented, .authorization] : [.killAndRestart, .authorization],
            invocation: "[SSL_CERT_FILE=CA] axel -q -n \(connections) -T 5 --max-redirect=10 "
                + "[--header='Authorization: AUTH'] -o OUTPUT URL; never "
                + "re-run",
            transientExitCodes: [],
            environment: { job in job.certificateAuthorityFile.map { ["SSL_CERT_FILE": $0] } ?? [:] }
        ) { job in
            [
                "--quiet", "--num-connections=\(connections)", "--timeout=\(seconds(job.idleTimeout))",
                "--max-redirect=10",
            ] + authorization(job, joined: "--header") + ["--output=\(job.transfers[0].output)", job.transfers[0].url]
        }
    }
}
