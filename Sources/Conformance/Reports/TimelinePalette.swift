/// The colours of a run's picture: one per representation, and the fixed ones the legend explains.
///
/// Red is kept out of the representation colours: it marks splices and bytes that match no version, the things a
/// reader should see first.
struct TimelinePalette: Sendable {
    /// What a colour stands for: a version of the resource, or (when the version cannot be told) a validator.
    enum Key: Hashable, Sendable, Comparable {
        case version(Int)
        case validator(String)
    }

    /// The representations in legend order (versions first, ascending), each with its colour.
    private(set) var entries: [(key: Key, colour: String)] = []

    /// Colour of bytes whose representation is unknown (no version, no validator).
    static let unknown = "#9e9e9e"
    /// Colour of splices and of output bytes matching no version.
    static let alarm = "#d62728"
    /// Ten colours that stay apart from each other and from red, in the order versions take them.
    static let colours = [
        "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#17becf", "#edc948", "#9c755f", "#8c564b", "#7f7f7f", "#bcbd22",
    ]

    /// The palette of a trace: every version the scenario serves, then every validator of a response whose version
    /// could not be told.
    init(_ trace: RunTrace) {
        var keys = Set(trace.versions.map(Key.version))
        for request in trace.requests where request.sent != nil || request.version != nil {
            if let key = Self.key(of: request) { keys.insert(key) }
        }
        for output in trace.outputs {
            for segment in output.segments { if let version = segment.version { keys.insert(.version(version)) } }
        }
        entries = keys.sorted().enumerated().map { index, key in (key, Self.colours[index % Self.colours.count]) }
    }

    /// What a request's bytes are coloured by.
    static func key(of request: RunTrace.Request) -> Key? {
        if let version = request.version { return .version(version) }
        return request.validator.map(Key.validator)
    }

    /// The colour of a key; grey for none.
    func colour(of key: Key?) -> String {
        guard let key else { return Self.unknown }
        return entries.first { $0.key == key }?.colour ?? Self.unknown
    }
}
