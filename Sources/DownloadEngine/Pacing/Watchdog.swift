import Foundation

/// The idle and overall timeouts of every running attempt, watched by one timer loop for the whole process.
///
/// Each attempt used to run in a task group beside a watchdog task of its own, whose sleep was a timer set up and
/// torn down per attempt: for many small files that was a task group, two child tasks and a timer per file. Now
/// an attempt runs as one child task (`async let`) registered here; a single loop wakes every tick (the smallest
/// tick of the registered attempts), and cancels the child task of an attempt that saw no bytes for its idle
/// timeout or passed its deadline, after noting why. The loop ends when nothing is registered and starts again
/// with the next attempt.
///
/// With a ``DownloadConfiguration/LowSpeedLimit`` each tick also feeds the attempt's byte count to its
/// ``LowSpeedWatch`` (the pure decision) and cancels an attempt that was too slow over the whole window, with
/// ``DownloadError/slowTransfer(bytesPerSecond:seconds:)`` as the reason.
final class Watchdog: @unchecked Sendable {
    /// One attempt being watched.
    final class Entry: @unchecked Sendable {
        let activity: ActivityClock
        let idle: Duration
        let overall: Duration?
        let started: ContinuousClock.Instant
        let tick: Duration
        /// The attempt's task while it runs; only used under the watchdog's lock, while registered.
        fileprivate var task: UnsafeCurrentTask?
        /// The low-speed limit and the attempt's watch; the watch is only used under the watchdog's lock.
        let lowSpeed: DownloadConfiguration.LowSpeedLimit?
        fileprivate var speed: LowSpeedWatch?
        private let lock = NSLock()
        private var _reason: DownloadError?
        private var _watchesSpeed = true

        init(
            activity: ActivityClock, idle: Duration, overall: Duration?, started: ContinuousClock.Instant,
            lowSpeed: DownloadConfiguration.LowSpeedLimit? = nil
        ) {
            self.activity = activity
            self.idle = idle
            self.overall = overall
            self.started = started
            self.lowSpeed = lowSpeed
            // A quarter of the window: an attempt is aborted at most a quarter window late.
            self.tick = min(max(min(idle, lowSpeed?.duration ?? idle) / 4, .milliseconds(10)), .seconds(1))
            speed = lowSpeed?.watch(bytes: activity.bytes, now: .now)
        }

        /// Stops the low-speed watch of this attempt: a transfer whose segments are each watched on their own.
        func stopWatchingSpeed() { lock.withLock { _watchesSpeed = false } }

        /// Whether the low-speed watch still applies.
        var watchesSpeed: Bool { lock.withLock { _watchesSpeed } }

        /// Why the watchdog stopped the attempt, if it did.
        var reason: DownloadError? {
            get { lock.withLock { _reason } }
            set { lock.withLock { _reason = newValue } }
        }
    }

    static let shared = Watchdog()

    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var looping = false

    /// Runs `body` as a child task watched by `entry`; when the watchdog stopped it, throws the reason instead of
    /// whatever the cancelled body threw.
    func run<T: Sendable>(_ entry: Entry, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        async let value: T = watched(entry, body)
        do {
            return try await value
        } catch {
            if let reason = entry.reason { throw reason }
            throw error
        }
    }

    private func watched<T: Sendable>(_ entry: Entry, _ body: @Sendable () async throws -> T) async throws -> T {
        withUnsafeCurrentTask { task in register(entry, task) }
        defer { unregister(entry) }
        return try await body()
    }

    private func register(_ entry: Entry, _ task: UnsafeCurrentTask?) {
        let start = lock.withLock {
            entry.task = task
            entries[ObjectIdentifier(entry)] = entry
            defer { looping = true }
            return !looping
        }
        if start { Task.detached { await self.loop() } }
    }

    private func unregister(_ entry: Entry) {
        lock.withLock {
            entries[ObjectIdentifier(entry)] = nil
            entry.task = nil
        }
    }

    private func loop() async {
        while true {
            let tick: Duration? = lock.withLock {
                guard let tick = entries.values.map(\.tick).min() else {
                    looping = false
                    return nil
                }
                return tick
            }
            guard let tick else { return }
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            lock.withLock {
                for entry in entries.values where entry.reason == nil {
                    if entry.activity.idleFor > entry.idle {
                        entry.reason = .idleTimeout(entry.idle.seconds)
                    } else if let overall = entry.overall, now - entry.started > overall {
                        entry.reason = .deadlineExceeded(overall.seconds)
                    } else if let limit = entry.lowSpeed, entry.watchesSpeed,
                        entry.speed?.observe(bytes: entry.activity.bytes, at: now) == true
                    {
                        entry.reason = limit.abort
                    } else {
                        continue
                    }
                    // Registered means the task is still running `body`: the unregistering happens under this lock.
                    entry.task?.cancel()
                }
            }
        }
    }
}
