import NIOConcurrencyHelpers
import Testing

@testable import RangeServer

/// A clock a test moves by hand, so expiry is tested without waiting.
final class ManualClock: Sendable {
    private let instant = NIOLockedValueBox(ContinuousClock.now)

    /// Moves the clock on.
    func advance(_ duration: Duration) { instant.withLockedValue { $0 += duration } }

    /// The time now.
    var now: ContinuousClock.Instant { instant.withLockedValue { $0 } }

    /// The clock as a configuration takes it.
    var read: @Sendable () -> ContinuousClock.Instant { { [instant] in instant.withLockedValue { $0 } } }
}

@Suite("BoundedTable: per-run state with a limit and an idle expiry")
struct BoundedTableTests {
    @Test("past the limit the least recently used entry goes first; a use makes an entry recent")
    func leastRecentlyUsedFirst() {
        let start = ContinuousClock.now
        var table = BoundedTable<String, Int>(Retention(limit: 3, idleExpiry: nil))
        for (offset, key) in ["a", "b", "c"].enumerated() {
            table.set(offset, forKey: key, now: start + .seconds(offset))
        }
        // "a" is used, so "b" is now the oldest and goes when "d" comes.
        #expect(table.value(forKey: "a", now: start + .seconds(4)) == 0)
        table.set(3, forKey: "d", now: start + .seconds(5))
        #expect(table.count == 3)
        #expect(table.entries.map(\.key) == ["c", "a", "d"])
        #expect(table.peekValue(forKey: "b", now: start + .seconds(5)) == nil)
        #expect(table.evictedCount == 1)
        // A peek is not a use: "c" stays the oldest.
        _ = table.peekValue(forKey: "c", now: start + .seconds(6))
        table.set(4, forKey: "e", now: start + .seconds(7))
        #expect(table.entries.map(\.key) == ["a", "d", "e"])
    }

    @Test("an entry unused for the expiry is forgotten; a use within it keeps it")
    func idleExpiry() {
        let start = ContinuousClock.now
        var table = BoundedTable<String, Int>(Retention(limit: 100, idleExpiry: .seconds(60)))
        table.set(1, forKey: "kept", now: start)
        table.set(2, forKey: "idle", now: start)
        #expect(table.value(forKey: "kept", now: start + .seconds(59)) == 1)
        #expect(table.peekValue(forKey: "idle", now: start + .seconds(60)) == nil)
        #expect(table.value(forKey: "idle", now: start + .seconds(60)) == nil)
        #expect(table.count == 1)
        #expect(table.expiredCount == 1)
        #expect(table.value(forKey: "kept", now: start + .seconds(118)) == 1)
        table.expire(now: start + .seconds(178))
        #expect(table.count == 0)
    }

    @Test("update changes a value in place, or adds it from the default")
    func update() {
        let now = ContinuousClock.now
        var table = BoundedTable<String, Int>(Retention(limit: 2, idleExpiry: nil))
        table.update(forKey: "k", now: now, default: { 10 }) { value in value += 1 }
        #expect(table.peekValue(forKey: "k", now: now) == 11)
        let doubled = table.update(forKey: "k", now: now, default: { 0 }) { value -> Int in
            value *= 2
            return value
        }
        #expect(doubled == 22)
        #expect(table.removeValue(forKey: "k") == 22)
        #expect(table.removeValue(forKey: "k") == nil)
        table.set(1, forKey: "x", now: now)
        table.set(2, forKey: "y", now: now)
        #expect(table.removeAll { key, _ in key == "x" } == 1)
        #expect(table.entries.map(\.key) == ["y"])
        table.removeAll()
        #expect(table.count == 0)
        table.set(3, forKey: "z", now: now)
        #expect(table.oldestEntry?.key == "z")
    }

    @Test("random operations agree with a plain list kept in order of use (2,000 operations, 5 seeds)")
    func agreesWithAReferenceModel() {
        for seed: UInt64 in 1...5 {
            var random = SplitMix(seed: seed)
            let limit = 1 + Int(random.next() % 8)
            let expiry = Duration.seconds(Int64(5 + random.next() % 20))
            var table = BoundedTable<Int, Int>(Retention(limit: limit, idleExpiry: expiry))
            // The reference: (key, value, last use), oldest first; expiry and the limit applied by hand.
            var model: [(key: Int, value: Int, used: ContinuousClock.Instant)] = []
            var now = ContinuousClock.now
            for step in 0..<2000 {
                now += .seconds(Int64(random.next() % 3))
                model.removeAll { now - $0.used >= expiry }
                // `removeValue` takes what is held, expired or not; drop the expired first, as any use would.
                table.expire(now: now)
                let key = Int(random.next() % 12)
                switch random.next() % 4 {
                case 0:
                    let value = table.value(forKey: key, now: now)
                    let index = model.firstIndex { $0.key == key }
                    #expect(value == index.map { model[$0].value }, "seed \(seed) step \(step)")
                    if let index {
                        var entry = model.remove(at: index)
                        entry.used = now
                        model.append(entry)
                    }
                case 1:
                    #expect(
                        table.peekValue(forKey: key, now: now) == model.first { $0.key == key }?.value,
                        "seed \(seed) step \(step)")
                case 2:
                    #expect(table.removeValue(forKey: key) == model.first { $0.key == key }?.value)
                    model.removeAll { $0.key == key }
                default:
                    table.set(step, forKey: key, now: now)
                    if let index = model.firstIndex(where: { $0.key == key }) {
                        model.remove(at: index)
                    } else if model.count >= limit {
                        model.removeFirst()
                    }
                    model.append((key, step, now))
                }
                table.expire(now: now)
                #expect(table.entries.map(\.key) == model.map(\.key), "seed \(seed) step \(step)")
                #expect(table.count <= limit)
            }
        }
    }

    @Test("bounds outside their ranges are refused with one line naming the option")
    func retentionProblems() {
        #expect(Retention.runs.problem() == nil)
        #expect(Retention(limit: 0, idleExpiry: nil).problem() == "--run-limit must be from 1 to 100000000, got 0")
        #expect(
            Retention(limit: 5, idleExpiry: .zero).problem()
                == "--run-expiry must be from 1 to 31622400 seconds, got 0")
    }
}

/// A small seeded generator, so the model test is the same run every time.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
