import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
import NIOConcurrencyHelpers
#endif

/// Foundation's URLSession, in process: one download per attempt with a simple retry loop, because
/// FoundationNetworking on Linux offers no resume data. Every attempt starts from zero.
///
/// Retries (up to the job's attempts): transport errors after one second; 408, 429 and 5xx after
/// Retry-After seconds (one when absent). Other statuses fail at once. Redirects are URLSession's own.
///
/// Every row over TLS is n/a: FoundationNetworking on Linux offers no way to trust a custom CA (no server-trust
/// authentication challenge, no trust setting on the session configuration).
public struct URLSessionClient: ClientAdapter {
    /// `urlsession`.
    public let name = "urlsession"
    /// Several files, with the job's concurrency; an Authorization set on each request.
    public let capabilities: ClientCapabilities = [.multipleFiles, .authorization]
    /// How it downloads.
    public let invocation =
        "URLSession.download(for:) per attempt, timeoutIntervalForRequest = idle timeout; retry transport "
        + "errors after 1s, 408/429/5xx after Retry-After (default 1s); no resume; a row's Authorization on each "
        + "request"

    /// Why it is n/a over TLS.
    public let tlsLimitation: String? =
        "FoundationNetworking on Linux takes no custom CA (no server-trust challenge, no trust setting)"

    /// Makes the client.
    public init() {}

    /// Always available.
    ///
    /// - Returns: nil.
    public func unavailableReason() async -> String? { nil }

    /// Starts the downloads in a task.
    ///
    /// - Parameters:
    ///   - job: what to download.
    /// - Returns: the run.
    public func start(_ job: ClientJob) async throws -> any ClientRun {
        let result = NIOLockedValueBox<ClientExit?>(nil)
        let task = Task {
            let exit = await Self.download(job)
            result.withLockedValue { $0 = exit }
        }
        return URLSessionRun(result: result, task: task)
    }

    private static func download(_ job: ClientJob) async -> ClientExit {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Double(job.idleTimeout.components.seconds)
        configuration.connectionProxyDictionary = [:]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        var failures: [String] = []
        var next = 0
        while next < job.transfers.count {
            let batch = job.transfers[next..<min(next + job.concurrency, job.transfers.count)]
            next += batch.count
            await withTaskGroup(of: String?.self) { group in
                for transfer in batch { group.addTask { await downloadOne(transfer, job: job, session: session) } }
                for await failure in group { if let failure { failures.append(failure) } }
            }
        }
        return failures.first.map { .failure($0) } ?? .success
    }

    /// One file with retries; returns the failure, or nil on success.
    private static func downloadOne(
        _ transfer: ClientJob.Transfer, job: ClientJob, session: URLSession
    ) async
        -> String?
    {
        guard let url = URL(string: transfer.url) else { return "bad URL \(transfer.url)" }
        var last = "no attempt"
        for attempt in 1...max(1, job.attempts) {
            if Task.isCancelled { return "cancelled" }
            var wait: Duration = .seconds(1)
            do {
                var request = URLRequest(url: url)
                if let authorization = job.authorization {
                    request.setValue(authorization, forHTTPHeaderField: "Authorization")
                }
                let (temporary, response) = try await session.download(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                if (200...299).contains(status) {
                    try? FileManager.default.removeItem(atPath: transfer.output)
                    try FileManager.default.moveItem(at: temporary, to: URL(fileURLWithPath: transfer.output))
                    return nil
                }
                try? FileManager.default.removeItem(at: temporary)
                last = "HTTP \(status)"
                guard status == 408 || status == 429 || (500...599).contains(status) else { return last }
                let retryAfter = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After")
                if let seconds = retryAfter.flatMap(Int.init) { wait = .seconds(seconds) }
            } catch {
                last = error.localizedDescription
                if (error as? URLError)?.code == .httpTooManyRedirects { return "too many redirects" }
            }
            if attempt < job.attempts { try? await Task.sleep(for: wait) }
        }
        return "\(last) after \(job.attempts) attempts"
    }
}

private struct URLSessionRun: ClientRun {
    let result: NIOLockedValueBox<ClientExit?>
    let task: Task<Void, Never>

    func poll() async -> ClientExit? { result.withLockedValue { $0 } }

    func terminate() async {
        task.cancel()
        result.withLockedValue { $0 = $0 ?? .failure("terminated") }
    }
}
