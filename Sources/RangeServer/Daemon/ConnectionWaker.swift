#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One thread that wakes suspended connections when their waits (delay, stall, pacing) are over.
///
/// Paced bodies wait many times a second per connection. A Dispatch timer per wait costs a timer source, a
/// trip through Dispatch's manager and a queue hop each; here a wait is one insertion into a heap, and one
/// wake-up of this thread resumes every connection that is due, so hundreds of paced connections cost a few
/// hundred wake-ups a second, batched, instead of thousands of timers.
final class ConnectionWaker: @unchecked Sendable {
    /// Waits due within this much of the one being served are served with it: a paced reader accepts being
    /// woken this early (its due line is absolute, so it never drifts), and grouping them saves wake-ups.
    static let coalescing: UInt64 = 1_000_000

    private struct Wait {
        var deadline: UInt64
        var token: UInt64
    }

    // Guarded by `mutex`; signalled through `condition` when an earlier deadline arrives or on stop.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var heap: [Wait] = []
    private var stopping = false
    private var thread: pthread_t?
    private let fire: @Sendable ([UInt64]) -> Void

    /// Starts the thread.
    ///
    /// - Parameter fire: called on the waker's thread with the tokens that are due, earliest first.
    init(fire: @escaping @Sendable ([UInt64]) -> Void) {
        self.fire = fire
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines are monotonic; a wall-clock step must not stretch or cut a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        var created = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &created, nil,
            { raw in
                let waker = Unmanaged<ConnectionWaker>.fromOpaque(raw!).takeRetainedValue()
                waker.run()
                return nil
            }, context)
        precondition(rc == 0, "cannot start the connection-waker thread: error \(rc)")
        thread = created
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// The monotonic clock in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Calls `fire` with `token` once `nanoseconds` have passed.
    func schedule(_ token: UInt64, after nanoseconds: UInt64) {
        let deadline = Self.now() &+ nanoseconds
        pthread_mutex_lock(mutex)
        let wakes = heap.first.map { deadline < $0.deadline } ?? true
        push(Wait(deadline: deadline, token: token))
        pthread_mutex_unlock(mutex)
        // Only a new earliest deadline needs the thread awake sooner than it planned.
        if wakes { pthread_cond_signal(condition) }
    }

    /// Ends the thread and waits for it; pending waits are dropped (the caller resumes those connections).
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        let running = thread
        thread = nil
        pthread_mutex_unlock(mutex)
        pthread_cond_signal(condition)
        if let running { pthread_join(running, nil) }
    }

    private func run() {
        var due: [UInt64] = []
        pthread_mutex_lock(mutex)
        while !stopping {
            guard let first = heap.first else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            let now = Self.now()
            if first.deadline > now {
                var until = timespec(
                    tv_sec: Int(first.deadline / 1_000_000_000), tv_nsec: Int(first.deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &until)
                continue
            }
            while let next = heap.first, next.deadline <= now + Self.coalescing {
                due.append(next.token)
                popFirst()
            }
            pthread_mutex_unlock(mutex)
            fire(due)
            due.removeAll(keepingCapacity: true)
            pthread_mutex_lock(mutex)
        }
        heap.removeAll()
        pthread_mutex_unlock(mutex)
    }

    // MARK: - Binary min-heap on deadline

    private func push(_ wait: Wait) {
        heap.append(wait)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func popFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
