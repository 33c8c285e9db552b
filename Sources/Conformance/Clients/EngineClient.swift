import DownloadEngine
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// The in-process `DownloadEngine` column: one engine per run, on the job's state directory, with the
/// job's concurrency and idle timeout, trusting the server's CA when it has TLS; pause, resume and cancel are the
/// engine's own calls.
public struct EngineClient: ClientAdapter {
    /// `engine`, or `engine-xN` for the segmented column.
    public let name: String
    /// Pause and resume, cancel, several files; segmented with more than one connection per file.
    public let capabilities: ClientCapabilities
    /// How it is driven.
    public let invocation: String
    /// ``DownloadConfiguration/connectionsPerFile``.
    public let connectionsPerFile: Int
    /// Where `rangefetch` is looked for before PATH, for ``command(for:)``.
    public let rangefetchDirectory: String?

    /// Over TLS the engine offers h2 by ALPN; it has no cleartext HTTP/2, since AsyncHTTPClient has none.
    public func protocolLimitation(_ scheme: MatrixScheme) -> String? {
        scheme == .h2c ? "\(name) has no cleartext HTTP/2 (AsyncHTTPClient has no h2c)" : nil
    }

    /// The adapter.
    ///
    /// - Parameters:
    ///   - connectionsPerFile: Connections per file; above 1 the column is `engine-xN` and segmented.
    ///   - rangefetchDirectory: where the equivalent `rangefetch` is looked for before PATH.
    /// - Returns: the engine column.
    public static func make(connectionsPerFile: Int = 1, rangefetchDirectory: String? = nil) -> EngineClient {
        EngineClient(connectionsPerFile: connectionsPerFile, rangefetchDirectory: rangefetchDirectory)
    }

    private init(connectionsPerFile: Int, rangefetchDirectory: String?) {
        self.connectionsPerFile = connectionsPerFile
        self.rangefetchDirectory = rangefetchDirectory
        let segmented = connectionsPerFile > 1
        name = segmented ? "engine-x\(connectionsPerFile)" : "engine"
        capabilities =
            segmented
            ? [.pauseAndResume, .cancel, .multipleFiles, .segmented, .authorization, .serverNamedOutput]
            : [.pauseAndResume, .cancel, .multipleFiles, .authorization, .serverNamedOutput]
        invocation =
            "DownloadEngine(stateDirectory: STATE, configuration: concurrency N, "
            + (segmented ? "connectionsPerFile \(connectionsPerFile), " : "")
            + "idle timeout 5s, connect 5s, "
            + "a row's connect-timeout and retries, tls: TLSTrust(additionalCertificateFiles: [CA])) "
            + "in process; add(DownloadRequest(url:destination:headers: [a row's Authorization])) (named by the "
            + "server: destination DIR, namesFromResponse: true), result(of:)"
    }

    /// Always available: it is linked in.
    ///
    /// - Returns: nil.
    public func unavailableReason() async -> String? { nil }

    /// The `rangefetch` command that drives the same engine with the same settings (`-x N` for the segmented column),
    /// found next to `rangecheck` or on PATH: the engine column's command by hand.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the command.
    public func command(for job: ClientJob) -> ClientCommand? {
        let rangefetch = SubprocessClient.rangefetch(nextTo: rangefetchDirectory, connections: connectionsPerFile)
        guard var command = rangefetch.command(for: job) else { return nil }
        command.standsFor = "the in-process engine (\(name)); rangefetch runs the same DownloadEngine"
        return command
    }

    /// Creates an engine and adds every transfer.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the run.
    /// - Throws: the engine's error when it cannot open the state directory or add a transfer.
    public func start(_ job: ClientJob) async throws -> any ClientRun {
        var configuration = DownloadConfiguration(concurrency: job.concurrency)
        configuration.connectionsPerFile = connectionsPerFile
        configuration.timeouts = .init(connect: job.connectTimeout, idle: job.idleTimeout)
        if let retries = job.retries { configuration.retry.maximumRetries = retries }
        if let authority = job.certificateAuthorityFile {
            configuration.tls = .init(additionalCertificateFiles: [authority])
        }
        let engine = try DownloadEngine(stateDirectory: job.stateDirectory, configuration: configuration)
        var ids: [DownloadTaskID] = []
        for transfer in job.transfers {
            let headers: HTTPFields =
                job.authorization.map { HTTPFields([HTTPField(name: .authorization, value: $0)]) } ?? [:]
            // Named by the server: the engine is given the directory and names the file from Content-Disposition.
            let request = DownloadRequest(
                url: transfer.url, destination: job.namesFromServer ? transfer.directory : transfer.output,
                headers: headers, namesFromResponse: job.namesFromServer)
            ids.append(try await engine.add(request))
        }
        return EngineRun(engine: engine, ids: ids)
    }
}

private final class EngineRun: ClientRun {
    let engine: DownloadEngine
    let ids: [DownloadTaskID]
    let paused = NIOLockedValueBox(false)
    let exit = NIOLockedValueBox<ClientExit?>(nil)
    let waiter = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// The run's "launches": one engine, but a pause ends one and its resume starts the next, as a step restart,
    /// so the judge knows which responses the harness's pause ended.
    let recorded = NIOLockedValueBox([ClientLaunch(reason: .first, started: Date())])

    init(engine: DownloadEngine, ids: [DownloadTaskID]) {
        self.engine = engine
        self.ids = ids
        let task = Task { [engine, ids, paused, exit] in
            var results: [DownloadResult] = []
            for id in ids {
                var result = await engine.result(of: id)
                // A pause by the harness ends the wait with .paused; wait again once resumed.
                while result == .paused && paused.withLockedValue({ $0 }) && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(10))
                    if !paused.withLockedValue({ $0 }) { result = await engine.result(of: id) }
                }
                results.append(result)
            }
            await engine.shutdown()
            let failure = results.lazy.compactMap { result -> String? in
                if case .failed(let error) = result { "\(error.kind): \(error.message)" } else { nil }
            }.first
            let outcome: ClientExit =
                if let failure { .failure(failure) } else if results.contains(.cancelled) {
                    .cancelled
                } else if results
                    .contains(.paused)
                { .failure("paused") } else { .success }
            exit.withLockedValue { $0 = $0 ?? outcome }
        }
        waiter.withLockedValue { $0 = task }
    }

    func poll() async -> ClientExit? { exit.withLockedValue { $0 } }

    var launches: [ClientLaunch] { recorded.withLockedValue { $0 } }

    func pause() async throws {
        recorded.withLockedValue { launches in
            if let last = launches.indices.last {
                launches[last].stopped = Date()
                launches[last].ended = Date()
            }
        }
        paused.withLockedValue { $0 = true }
        for id in ids { try await engine.pause(id) }
    }

    func resume() async throws {
        recorded.withLockedValue { $0.append(ClientLaunch(reason: .stepRestart, started: Date())) }
        for id in ids { try await engine.resume(id) }
        paused.withLockedValue { $0 = false }
    }

    func cancel() async throws {
        for id in ids { try await engine.cancel(id) }
    }

    func terminate() async {
        waiter.withLockedValue { $0 }?.cancel()
        // A hung engine may never shut down (its threads deadlocked): the run ends here all the same, and says so.
        let stopped = await finishes(within: Self.shutdownLimit) { [engine] in await engine.shutdown() }
        exit.withLockedValue {
            $0 = $0 ?? .failure(stopped ? "terminated" : "terminated; the engine did not shut down within 10 s")
        }
    }

    /// How long terminating waits for the engine to shut down.
    static let shutdownLimit: Duration = .seconds(10)
}
