import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One file downloaded with URLSession and resumed with HTTP's own means: the bytes already in the output are kept,
/// and the next request asks for the rest with `Range` and `If-Range`.
///
/// URLSession's own resume data (`cancel(byProducingResumeData:)`) is not used: FoundationNetworking on Linux does
/// not produce any, and on Apple's systems it does not survive the app being killed. Instead the validator the kept
/// bytes came from (a strong ETag, else Last-Modified) is written next to the output, in `OUTPUT.resume`, before
/// any byte of the body is, so a download started after a kill knows what it kept and can ask the server to send
/// the rest only if the file has not changed. Without that record the kept bytes cannot be vouched for, and the
/// download starts from zero.
///
/// One value is one run of a downloader: every piece of state it needs to resume is on disk, and a new value is
/// what a restarted program would be.
final class ResumableDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// How a run ended.
    enum Ending: Equatable {
        /// The output holds the whole file.
        case completed
        /// It gave up: a status that is final, or every attempt failed.
        case failed(String)
        /// The stop condition held: the transfer was torn down with its bytes on disk, as a kill leaves them.
        case stopped
    }

    /// What survives a restart: the validator of the kept bytes.
    private struct Record: Codable {
        var validator: String
    }

    /// How one attempt ended.
    private enum AttemptEnding {
        case ending(Ending)
        case retry(after: Double, reason: String)
    }

    let url: URL
    let output: String
    private var recordPath: String { output + ".resume" }

    // Everything below is touched from the delegate queue and from `run`; the lock guards it.
    private let lock = NSLock()
    private var file: FileHandle?
    private var onDisk: Int64 = 0
    private var length: Int64?
    private var stopWhen: (@Sendable (_ onDisk: Int64) -> Bool)?
    private var ending: AttemptEnding?
    private var finished: CheckedContinuation<Void, Never>?

    init(url: URL, output: String) {
        self.url = url
        self.output = output
    }

    /// Downloads until the file is complete, up to `attempts` attempts (transport errors, 408, 429 and 5xx are
    /// retried after `Retry-After` or one second), or until `stopWhen` holds for the bytes of the output on disk.
    func run(attempts: Int, stopWhen: (@Sendable (Int64) -> Bool)?) async -> Ending {
        lock.withLock { self.stopWhen = stopWhen }
        var reason = "no attempt"
        for attempt in 1...max(1, attempts) {
            switch await attemptOnce() {
            case .ending(let ending):
                return ending
            case .retry(let seconds, let why):
                reason = why
                if attempt < attempts { try? await Task.sleep(for: .seconds(seconds)) }
            }
        }
        return .failed("\(reason) (after \(attempts) attempts)")
    }

    /// The removal of a cancelled download: the output and its record.
    func discard() {
        try? FileManager.default.removeItem(atPath: output)
        try? FileManager.default.removeItem(atPath: recordPath)
    }

    private func attemptOnce() async -> AttemptEnding {
        var request = URLRequest(url: url)
        let kept = keptBytes()
        if kept.count > 0, let validator = kept.validator {
            request.setValue("bytes=\(kept.count)-", forHTTPHeaderField: "Range")
            request.setValue(validator, forHTTPHeaderField: "If-Range")
        }
        lock.withLock {
            onDisk = kept.count
            ending = nil
        }
        let configuration = URLSessionConfiguration.ephemeral
        // An idle connection is given up after this long, and the attempt retried (the harness's idle timeout).
        configuration.timeoutIntervalForRequest = 5
        configuration.connectionProxyDictionary = [:]
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        await withCheckedContinuation { continuation in
            lock.withLock { finished = continuation }
            session.dataTask(with: request).resume()
        }
        session.finishTasksAndInvalidate()
        return lock.withLock {
            try? file?.close()
            file = nil
            return ending ?? .retry(after: 1, reason: "the attempt ended without an answer")
        }
    }

    /// The bytes already in the output and the validator they came from; output without a record is removed, as
    /// bytes that cannot be vouched for.
    private func keptBytes() -> (count: Int64, validator: String?) {
        let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? NSNumber)?.int64Value ?? 0
        guard size > 0, let data = FileManager.default.contents(atPath: recordPath),
            let record = try? JSONDecoder().decode(Record.self, from: data)
        else {
            discard()
            return (0, nil)
        }
        return (size, record.validator)
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let response = response as? HTTPURLResponse else {
            finish(.ending(.failed("not an HTTP response")))
            return completionHandler(.cancel)
        }
        let status = response.statusCode
        let header = { (name: String) in response.value(forHTTPHeaderField: name) }
        let range = header("Content-Range").flatMap(ContentRange.init)
        let kept = lock.withLock { onDisk }
        switch status {
        case 200:
            // The whole file (a new version, or a server that ignored the Range): start over from byte zero.
            saveRecord(validator: Self.validator(header("ETag"), header("Last-Modified")))
            startFile(at: 0)
            lock.withLock { length = response.expectedContentLength >= 0 ? response.expectedContentLength : nil }
            completionHandler(.allow)
        case 206 where range?.start == kept:
            startFile(at: kept)
            lock.withLock { length = range?.length }
            completionHandler(.allow)
        case 206:
            // A range that does not start where the kept bytes end cannot be appended: fetch it all again.
            discard()
            finish(.retry(after: 0, reason: "206 at \(range?.start ?? -1), expected \(kept)"))
            completionHandler(.cancel)
        case 416 where kept > 0 && range?.length == kept:
            // Asked for the bytes past the end of a file that is already whole.
            try? FileManager.default.removeItem(atPath: recordPath)
            finish(.ending(.completed))
            completionHandler(.cancel)
        case 416:
            // The kept bytes do not fit the file the server has: start from zero.
            discard()
            finish(.retry(after: 0, reason: "416"))
            completionHandler(.cancel)
        case 408, 429, 500...599:
            let seconds = header("Retry-After").flatMap(Double.init) ?? 1
            finish(.retry(after: min(seconds, 60), reason: "HTTP \(status)"))
            completionHandler(.cancel)
        default:
            finish(.ending(.failed("HTTP \(status)")))
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let stop: Bool = lock.withLock {
            guard let file, ending == nil else { return false }
            do {
                try file.write(contentsOf: data)
            } catch {
                ending = .ending(.failed("cannot write \(output): \(error)"))
                return true
            }
            onDisk += Int64(data.count)
            if stopWhen?(onDisk) == true {
                ending = .ending(.stopped)
                return true
            }
            return false
        }
        if stop { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            if ending == nil {
                if let error {
                    ending = .retry(after: 1, reason: error.localizedDescription)
                } else if let length, onDisk != length {
                    // A body that ended short (or long) of its declared length is an interruption, not the file.
                    ending = .retry(after: 1, reason: "ended at \(onDisk) of \(length) bytes")
                } else {
                    try? FileManager.default.removeItem(atPath: recordPath)
                    ending = .ending(.completed)
                }
            }
            defer { finished = nil }
            return finished
        }
        continuation?.resume()
    }

    // MARK: Helpers

    private func finish(_ attemptEnding: AttemptEnding) {
        lock.withLock { if ending == nil { ending = attemptEnding } }
    }

    /// Records the validator of the bytes about to be written, before any of them is, so bytes on disk are never
    /// without the validator they came from; without one, the bytes cannot be resumed and there is no record.
    private func saveRecord(validator: String?) {
        if let validator, let data = try? JSONEncoder().encode(Record(validator: validator)) {
            _ = FileManager.default.createFile(atPath: recordPath, contents: data)
        } else {
            try? FileManager.default.removeItem(atPath: recordPath)
        }
    }

    /// Opens the output for writing at `offset`, dropping anything past it.
    private func startFile(at offset: Int64) {
        if !FileManager.default.fileExists(atPath: output) {
            _ = FileManager.default.createFile(atPath: output, contents: nil)
        }
        let handle = FileHandle(forWritingAtPath: output)
        try? handle?.truncate(atOffset: UInt64(offset))
        try? handle?.seek(toOffset: UInt64(offset))
        lock.withLock {
            file = handle
            onDisk = offset
            if handle == nil { ending = .ending(.failed("cannot open \(output)")) }
        }
    }

    /// The validator to resume with: a strong ETag, else Last-Modified; a weak ETag never goes in If-Range.
    private static func validator(_ etag: String?, _ lastModified: String?) -> String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}
