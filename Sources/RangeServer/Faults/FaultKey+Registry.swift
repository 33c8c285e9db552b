extension FaultKey {
    /// Every fault key, in canonical order: the order of `FaultPlan.appliedNames`, the journal's `faults` field and
    /// the index page within each kind.
    ///
    /// A new key is a file under `Faults/Keys/` and one line here.
    package static let all: [FaultKey] = [
        .delay, .status, .retryAfter, .dropAfter, .resetAfter, .tlsTruncateAfter, .stallAfter, .stallFor, .rate,
        .misalignRange, .ignoreRange, .ignoreIfRange, .noETag, .weakETag, .noLastModified, .noAcceptRanges, .chunked,
        .etagSalt, .ifRange, .unsatisfiableShape, .contentRangeOn200, .contentRangeTotal, .rangeCap, .head, .encoding,
        .lengthDelta, .garbageAfter,
        .chunkedWithLength, .badChunkAfter, .connectionCap,
        .contentRange, .multipart, .unsolicited206, .htmlPage, .contentType, .contentDisposition, .rejectHeader,
        .headLengthDelta, .lastModifiedCollide, .header,
        .rstStreamAfter, .rstCode, .goAwayAfter, .goAway, .goAwayRefuse, .maxConcurrentStreams, .noContentLength,
        .probability, .faultSeed,
    ]

    /// The names of the keys only an HTTP/2 front end can carry out (stream and connection frames).
    static let http2Only: Set<String> = [
        rstStreamAfter.name, rstCode.name, goAwayAfter.name, goAway.name, goAwayRefuse.name, maxConcurrentStreams.name,
        noContentLength.name,
    ]

    /// The names of the keys an HTTP/2 front end refuses: chunked framing does not exist there (RFC 9113 §8.2.2),
    /// and TLS truncation would end every stream of the connection without a frame.
    static let http1Only: Set<String> = [
        chunked.name, chunkedWithLength.name, badChunkAfter.name, tlsTruncateAfter.name,
    ]

    /// The keys by name, for the parser.
    static let named: [String: FaultKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The names of the keys that need a body (`needsBody`).
    private static let bodyKeyNames: Set<String> = Set(all.filter(\.needsBody).map(\.name))

    /// Whether an applied name (`key=value`) names a key that needs a body.
    static func needsBody(name: String) -> Bool {
        bodyKeyNames.contains(String(name.prefix { $0 != "=" }))
    }

    /// The units `FaultPlan.merged(over:)` moves: when the query sets any of `triggers`, every key of `members` comes
    /// from the query. One unit per key, its followers (`Merge.follows`) included; one per `Merge.together` group.
    static let mergeUnits: [(triggers: [FaultKey], members: [FaultKey])] = {
        var units: [(triggers: [FaultKey], members: [FaultKey])] = []
        var groupsDone: Set<String> = []
        for key in all {
            switch key.merge {
            case .alone, .follows:
                let followers = all.filter { $0.merge == .follows(key.name) }
                units.append((triggers: [key], members: [key] + followers))
            case .together(let group):
                guard groupsDone.insert(group).inserted else { continue }
                let members = all.filter { $0.merge == .together(group) }
                units.append((triggers: members, members: members))
            }
        }
        return units
    }()
}
