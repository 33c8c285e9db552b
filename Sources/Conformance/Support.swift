import Synchronization

/// A value behind a lock, shareable between tasks (a `Mutex` in a class, so it can be captured and stored).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }

    var value: Value { mutex.withLock { $0 } }
}
