import HTTPVocabulary
import NIOConcurrencyHelpers

/// Each representation's `Repr-Digest` field value (its SHA-256), serialized once, by `Representation.digestKey`.
///
/// An empty string marks a representation that could not be read: it is answered without a digest instead of
/// being hashed again.
///
/// A `/bytes` key is any (length, seed, version) a client names, so the cache keeps at most ``capacity`` digests,
/// forgetting the least recently used (a forgotten digest is computed again when asked for).
final class DigestCache: Sendable {
    /// The most digests kept.
    static let capacity = 10_000

    private let digests = NIOLockedValueBox(BoundedTable<String, String>(Retention(limit: capacity, idleExpiry: nil)))

    /// The digest stored under `key`, empty when reading failed, nil when not computed yet.
    func digest(forKey key: String) -> String? {
        digests.withLockedValue { $0.value(forKey: key, now: .now) }
    }

    /// Hashes `representation`, stores the result under its key and returns it (empty when it cannot be read).
    func compute(_ representation: Representation, key: String) -> String {
        let encoded = representation.sha256().map { ReprDigest([("sha-256", $0)]).headerValue } ?? ""
        digests.withLockedValue { $0.set(encoded, forKey: key, now: .now) }
        return encoded
    }

    /// How many digests are kept now (for tests).
    var count: Int { digests.withLockedValue { $0.count } }
}

/// A `Repr-Digest` field that a finished plan still lacks because the digest has not been computed.
///
/// Hashing a large representation is too slow for a pool thread, so the router plans the response in full and
/// leaves this in ``ResponsePlan/pendingDigest``; the daemon calls ``ResponsePlan/completeDigest()`` elsewhere,
/// with the connection suspended. It only fills in one field: nothing is planned a second time. A class, so a
/// plan without one stays as small as it was.
final class PendingDigest: Sendable {
    let representation: Representation
    let key: String
    let cache: DigestCache
    /// Where the field goes among the plan's header fields.
    let headerIndex: Int

    init(representation: Representation, key: String, cache: DigestCache, headerIndex: Int) {
        self.representation = representation
        self.key = key
        self.cache = cache
        self.headerIndex = headerIndex
    }
}

extension ResponsePlan {
    /// Computes the pending digest, if any, and inserts its `Repr-Digest` field where the router would have put a
    /// cached one. Slow: call it off the pool threads.
    mutating func completeDigest() {
        guard let pending = pendingDigest.take() else { return }
        // Another request may have computed it meanwhile.
        let digest =
            pending.cache.digest(forKey: pending.key) ?? pending.cache.compute(pending.representation, key: pending.key)
        guard !digest.isEmpty else { return }
        headers.insert(reprDigestField(digest), at: min(pending.headerIndex, headers.count))
    }
}

/// The `Repr-Digest` field (RFC 9530) with a value serialized by ``DigestCache``.
func reprDigestField(_ value: String) -> HeaderField {
    HeaderField("Repr-Digest", value)
}
