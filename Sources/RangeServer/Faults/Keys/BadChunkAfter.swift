extension FaultKey {
    /// `bad-chunk-after=SIZE`: SIZE body bytes in chunks, then a chunk-size line that is not hexadecimal (plain HTTP).
    static let badChunkAfter = size(
        "bad-chunk-after", kind: .bodyFraming,
        help: "SIZE body bytes in chunks, then a malformed chunk-size line, then close (plain HTTP only)",
        needsBody: true, field: \.badChunkAfter,
        bodyFault: { plan in plan.badChunkAfter.map { .malformedChunk(after: $0) } })
}
