import Foundation

/// Threads for blocking socket work, one job per thread at a time, started on demand and kept for the next job.
///
/// A job is a whole request on its connection (connect, send, read head and body, hand each part to the sink), so
/// there are never more threads than requests in flight, which the engine bounds by its concurrency. A job goes
/// straight to the idle thread that finished last (its stack is warm), woken through its own condition: no queue
/// and no condition shared by every thread, whose mutex the threads and the callers contended for. A thread idle
/// for ``idleLifetime`` ends; ``stop()`` ends every idle thread at once and each busy one after its job.
final class IOThreadPool: @unchecked Sendable {
    /// One thread: its next job, handed over under its own condition.
    private final class Worker: @unchecked Sendable {
        let condition = NSCondition()
        var job: (@Sendable () -> Void)?
        var retired = false
    }

    private let lock = NSLock()
    private var idle: [Worker] = []
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
    var threadCount: Int { lock.withLock { threads } }

    /// Runs `job` on a pool thread: the idle one that finished last, or a new one when every thread is busy.
    func run(_ job: @escaping @Sendable () -> Void) {
        let worker: Worker? = lock.withLock {
            if let worker = idle.popLast() { return worker }
            threads += 1
            return nil
        }
        if let worker {
            worker.condition.withLock {
                worker.job = job
                worker.condition.signal()
            }
            return
        }
        let fresh = Worker()
        fresh.job = job
        let thread = Thread { [self] in work(fresh) }
        thread.name = name
        thread.start()
    }

    /// Ends idle threads now and busy ones when their job returns. Jobs run later each get a thread that ends
    /// after it.
    func stop() {
        let workers = lock.withLock {
            stopped = true
            defer { idle = [] }
            threads -= idle.count
            return idle
        }
        for worker in workers {
            worker.condition.withLock {
                worker.retired = true
                worker.condition.signal()
            }
        }
    }

    private func work(_ worker: Worker) {
        while true {
            let job = worker.condition.withLock {
                defer { worker.job = nil }
                return worker.job
            }
            job?()
            let stopping = lock.withLock {
                if stopped {
                    threads -= 1
                    return true
                }
                idle.append(worker)
                return false
            }
            if stopping || !waitForJob(worker) { return }
        }
    }

    /// Waits until a job is handed to `worker`; `false` when the thread is to end instead (idle too long, or
    /// retired by ``stop()``), in which case it is no longer counted or listed as idle.
    private func waitForJob(_ worker: Worker) -> Bool {
        let deadline = Date(timeIntervalSinceNow: idleLifetime)
        worker.condition.lock()
        while worker.job == nil, !worker.retired {
            if !worker.condition.wait(until: deadline) { break }
        }
        let hasJob = worker.job != nil
        let retired = worker.retired
        worker.condition.unlock()
        if hasJob { return true }
        // `stop()` took it off the idle list and uncounted it.
        if retired { return false }
        // Timed out: leave, unless `run()` or `stop()` took this worker off the idle list just now.
        let left = lock.withLock {
            guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
            idle.remove(at: index)
            threads -= 1
            return true
        }
        if left { return false }
        // Taken off the list by `run()` (a job is on the way) or by `stop()` (it retires this worker).
        worker.condition.lock()
        while worker.job == nil, !worker.retired { worker.condition.wait() }
        let gotJob = worker.job != nil
        worker.condition.unlock()
        return gotJob
    }
}
