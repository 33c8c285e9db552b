import Foundation

/// Threads for blocking socket work, one job per thread at a time, started on demand and kept for the next job.
///
/// A job is a whole request on its connection (connect, send, read head and body, hand each part to the sink), so
/// there are never more threads than requests in flight, which the engine bounds by its concurrency. A thread idle
/// for ``idleLifetime`` ends; ``stop()`` ends every idle thread at once and each busy one after its job.
final class IOThreadPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var idle = 0
    private var threads = 0
    private var stopped = false
    private let name: String
    /// How long a thread without work waits for the next job before it ends.
    let idleLifetime: TimeInterval

    init(name: String, idleLifetime: TimeInterval = 30) {
        self.name = name
        self.idleLifetime = idleLifetime
    }

    /// The number of threads alive (busy or idle).
    var threadCount: Int { condition.withLock { threads } }

    /// Runs `job` on a pool thread: an idle one, or a new one when every thread is busy.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        // Threads waiting for work take the queued jobs; only jobs beyond them need a new thread.
        let spawn = jobs.count > idle
        if spawn { threads += 1 } else { condition.signal() }
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in work() }
            thread.name = name
            thread.start()
        }
    }

    /// Ends idle threads now and busy ones when their job returns. Jobs queued later still run, each on a thread
    /// that ends after it.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    private func work() {
        condition.lock()
        while true {
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job()
                condition.lock()
                continue
            }
            if stopped { break }
            idle += 1
            let woken = condition.wait(until: Date(timeIntervalSinceNow: idleLifetime))
            idle -= 1
            if !woken, jobs.isEmpty { break }
        }
        threads -= 1
        condition.unlock()
    }
}
