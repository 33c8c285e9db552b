import Foundation

/// Fans events out to every subscriber.
final class EventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var continuations: [Int: AsyncStream<DownloadEvent>.Continuation] = [:] {
        // Published to on every event (about six per task), subscribed to rarely: the array is built once here,
        // not copied out of the dictionary per event.
        didSet { targets = Array(continuations.values) }
    }
    private var targets: [AsyncStream<DownloadEvent>.Continuation] = []
    private var nextKey = 0
    private var finished = false

    func subscribe() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self)
        let key: Int? = lock.withLock {
            guard !finished else { return nil }
            nextKey += 1
            continuations[nextKey] = continuation
            return nextKey
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.continuations.removeValue(forKey: key) }
        }
        return stream
    }

    func publish(_ event: DownloadEvent) {
        let targets = lock.withLock { self.targets }
        for continuation in targets { continuation.yield(event) }
    }

    func finish() {
        let targets = lock.withLock {
            finished = true
            let all = Array(continuations.values)
            continuations.removeAll()
            return all
        }
        for continuation in targets { continuation.finish() }
    }
}
