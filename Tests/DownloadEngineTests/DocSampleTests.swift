import DownloadEngine
import Foundation
import Testing

/// The Swift sample of docs/engine.md, compiled here with a plain (not `@testable`) import, so it uses only public
/// API. `scripts/check-docs` checks that the lines between the markers are the document's sample. It is compiled,
/// not run: it downloads from a server on port 8080 into the current directory, which a test must not assume.
private func engineDocSample() async throws {
    // doc-sample: docs/engine.md
    var configuration = DownloadConfiguration()  // defaults for everything
    configuration.concurrency = 4  // transfers at once, FIFO queue
    configuration.timeouts = .init(connect: .seconds(10), idle: .seconds(30), overall: nil)
    configuration.retry = .exponential(maximumRetries: 10)
    configuration.redirects = .follow(max: 20)

    let engine = try DownloadEngine(stateDirectory: "downloads/.rangefetch", configuration: configuration)
    let events = engine.events()  // subscribe before adding to see every event
    Task {
        for await event in events {
            if case .progress(let id, let p) = event {
                print(id, p.bytes, p.total ?? -1, p.bytesPerSecond, p.eta ?? -1)
            }
        }
    }
    let id = try await engine.add(
        DownloadRequest(url: "http://127.0.0.1:8080/bytes/10M", destination: "downloads/a.bin"))
    switch await engine.result(of: id) {
    case .completed(let path, let sha256, let bytes): print("done", path, sha256 ?? "no digest", bytes)
    case .failed(let error): print("failed:", error)  // DownloadError, one readable line
    case .paused, .cancelled: break
    }
    await engine.shutdown()  // pauses running transfers, persists, closes the client
    // end doc-sample
}

/// The structured-cancellation sample of docs/engine.md, compiled (not run) like the one above.
private func cancellationDocSample() async throws {
    // doc-sample: docs/engine.md
    var configuration = DownloadConfiguration()
    configuration.onTaskCancellation = .pause  // the default: keep what was downloaded
    configuration.proxy = try .fromEnvironment(ProcessInfo.processInfo.environment)  // opt in, as curl reads it
    let engine = try DownloadEngine(stateDirectory: "downloads/.rangefetch", configuration: configuration)
    let request = DownloadRequest(
        url: "http://127.0.0.1:8080/bytes/10M", destination: "downloads/b.bin",
        headers: [.authorization: "Bearer TOKEN"])  // stored only with storesCredentials: true
    let download = Task { try await engine.download(request) }
    download.cancel()  // pauses the download; the call throws CancellationError
    _ = try? await download.value
    await engine.shutdown()
    // end doc-sample
}
