import NIOConcurrencyHelpers

/// A value behind a lock, shareable between tasks (a `NIOLockedValueBox`, which ThreadSanitizer understands; see docs/reliability.md).
final class Locked<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>

    init(_ value: Value) { box = NIOLockedValueBox(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { box.withLockedValue { body(&$0) } }

    var value: Value { box.withLockedValue { $0 } }
}
