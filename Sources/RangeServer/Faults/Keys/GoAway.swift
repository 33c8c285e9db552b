extension FaultKey {
    /// `goaway=graceful|close`: how `goaway-after` ends the connection.
    static let goAway = FaultKey(
        "goaway", kind: .connection,
        help: "with goaway-after: graceful finishes the stream, then closes; close closes after SIZE bytes",
        merge: .follows("goaway-after"), needsBody: true, field: \.goAway)
}

extension FaultPlan {
    /// How `goaway-after` ends the connection.
    package enum GoAwayMode: String, CaseIterable, Hashable, Sendable {
        /// GOAWAY names the stream as the last one processed, the stream finishes, then the connection closes.
        case graceful
        /// GOAWAY names the stream, and the connection closes at once: the client holds SIZE bytes and must resume.
        case close
    }
}
