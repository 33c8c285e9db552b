/// A table of per-run state that cannot grow without bound: at most ``Retention/limit`` entries, each forgotten once
/// unused for ``Retention/idleExpiry``, the least recently used first.
///
/// A value with no lock of its own: its owner keeps it behind one (`NIOLockedValueBox`) and passes the time in, so
/// a test can move the clock. The entries are linked in order of last use, so every operation first drops the
/// expired ones from the old end without a scan, and a full table drops its oldest in constant time. Nothing runs
/// in the background: an idle process keeps what it holds until its next use, and never more than the limit.
///
/// Its storage (a dictionary and an array of nodes) is sized by the most entries held at once, so after it has
/// been full it stays that size; ``removeAll()`` gives the memory back.
package struct BoundedTable<Key: Hashable, Value> {
    fileprivate struct Node {
        var key: Key
        var value: Value
        var lastUsed: ContinuousClock.Instant
        /// The index of the entry used just before this one; -1 for the oldest.
        var older: Int
        /// The index of the entry used just after this one; -1 for the newest.
        var newer: Int
    }

    /// The bounds.
    public let retention: Retention
    private var index: [Key: Int] = [:]
    private var nodes: [Node?] = []
    private var free: [Int] = []
    private var oldest = -1
    private var newest = -1
    /// How many entries were forgotten because they were unused for the expiry.
    public private(set) var expiredCount = 0
    /// How many entries were forgotten because the table was full.
    public private(set) var evictedCount = 0

    /// Makes an empty table.
    ///
    /// - Parameters:
    ///   - retention: the bounds; a limit below 1 is taken as 1.
    public init(_ retention: Retention) {
        var retention = retention
        retention.limit = max(1, retention.limit)
        self.retention = retention
    }

    /// The entries held now (expired ones that no operation has dropped yet included).
    public var count: Int { index.count }

    /// Drops the entries unused for the expiry, as of `now`.
    ///
    /// - Parameters:
    ///   - now: the time.
    public mutating func expire(now: ContinuousClock.Instant) {
        guard let expiry = retention.idleExpiry else { return }
        while oldest >= 0, now - nodes[oldest]!.lastUsed >= expiry {
            remove(at: oldest)
            expiredCount += 1
        }
    }

    /// The value for `key`, counted as a use.
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - now: the time of the use.
    /// - Returns: the value; nil when there is none or it has expired.
    public mutating func value(forKey key: Key, now: ContinuousClock.Instant) -> Value? {
        expire(now: now)
        guard let position = index[key] else { return nil }
        touch(position, now: now)
        return nodes[position]!.value
    }

    /// The value for `key`, without counting a use (it does not keep the entry alive).
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - now: the time, to leave out an entry that has expired.
    /// - Returns: the value; nil when there is none or it has expired.
    public func peekValue(forKey key: Key, now: ContinuousClock.Instant) -> Value? {
        guard let position = index[key], let node = nodes[position] else { return nil }
        if let expiry = retention.idleExpiry, now - node.lastUsed >= expiry { return nil }
        return node.value
    }

    /// Changes the value for `key` in place, adding it (from `makeValue`) when there is none, and counts a use.
    ///
    /// Adding to a full table first forgets its least recently used entry.
    ///
    /// - Parameters:
    ///   - key: the key.
    ///   - now: the time of the use.
    ///   - makeValue: the value of a new entry.
    ///   - body: changes the value.
    /// - Returns: what `body` returned.
    public mutating func update<Result>(
        forKey key: Key, now: ContinuousClock.Instant, default makeValue: () -> Value,
        _ body: (inout Value) -> Result
    ) -> Result {
        expire(now: now)
        if let position = index[key] {
            touch(position, now: now)
            return body(&nodes[position]!.value)
        }
        if index.count >= retention.limit {
            remove(at: oldest)
            evictedCount += 1
        }
        let node = Node(key: key, value: makeValue(), lastUsed: now, older: newest, newer: -1)
        let position: Int
        if let reused = free.popLast() {
            position = reused
            nodes[position] = node
        } else {
            position = nodes.count
            nodes.append(node)
        }
        if newest >= 0 { nodes[newest]!.newer = position }
        newest = position
        if oldest < 0 { oldest = position }
        index[key] = position
        return body(&nodes[position]!.value)
    }

    /// Sets the value for `key`, counting a use (see ``update(forKey:now:default:_:)``).
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - key: the key.
    ///   - now: the time of the use.
    public mutating func set(_ value: Value, forKey key: Key, now: ContinuousClock.Instant) {
        update(forKey: key, now: now, default: { value }) { $0 = value }
    }

    /// Forgets `key`.
    ///
    /// - Parameters:
    ///   - key: the key.
    /// - Returns: its value, if it had one.
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let position = index[key] else { return nil }
        let value = nodes[position]!.value
        remove(at: position)
        return value
    }

    /// Forgets every entry that `shouldRemove` selects.
    ///
    /// - Parameters:
    ///   - shouldRemove: selects by key and value.
    /// - Returns: how many were forgotten.
    @discardableResult
    public mutating func removeAll(where shouldRemove: (Key, Value) -> Bool) -> Int {
        var selected: [Int] = []
        var position = oldest
        while position >= 0 {
            let node = nodes[position]!
            if shouldRemove(node.key, node.value) { selected.append(position) }
            position = node.newer
        }
        for position in selected { remove(at: position) }
        return selected.count
    }

    /// Forgets every entry and gives the storage back.
    public mutating func removeAll() {
        index = [:]
        nodes = []
        free = []
        oldest = -1
        newest = -1
    }

    /// Every entry, the least recently used first.
    public var entries: [(key: Key, value: Value)] {
        var result: [(key: Key, value: Value)] = []
        result.reserveCapacity(index.count)
        var position = oldest
        while position >= 0 {
            let node = nodes[position]!
            result.append((node.key, node.value))
            position = node.newer
        }
        return result
    }

    /// The least recently used entry (the next to go when the table is full).
    public var oldestEntry: (key: Key, value: Value)? {
        guard oldest >= 0, let node = nodes[oldest] else { return nil }
        return (node.key, node.value)
    }

    /// Makes the entry at `position` the newest.
    private mutating func touch(_ position: Int, now: ContinuousClock.Instant) {
        nodes[position]!.lastUsed = now
        guard position != newest else { return }
        unlink(position)
        nodes[position]!.older = newest
        nodes[position]!.newer = -1
        if newest >= 0 { nodes[newest]!.newer = position }
        newest = position
        if oldest < 0 { oldest = position }
    }

    private mutating func remove(at position: Int) {
        unlink(position)
        index[nodes[position]!.key] = nil
        nodes[position] = nil
        free.append(position)
    }

    /// Takes the entry at `position` out of the order of use, leaving its node in place.
    private mutating func unlink(_ position: Int) {
        let node = nodes[position]!
        if node.older >= 0 { nodes[node.older]!.newer = node.newer } else { oldest = node.newer }
        if node.newer >= 0 { nodes[node.newer]!.older = node.older } else { newest = node.older }
    }
}

extension BoundedTable: Sendable where Key: Sendable, Value: Sendable {}

extension BoundedTable.Node: Sendable where Key: Sendable, Value: Sendable {}
