import HTTPVocabulary

extension FaultKey {
    /// `retry-after=N` or `retry-after=date:+Ns`: the `Retry-After` of `status`'s answer or of `connection-cap`'s 503,
    /// as delay-seconds or as an IMF-fixdate N seconds ahead (RFC 9110 §10.2.3 allows both).
    static let retryAfter = FaultKey(
        "retry-after", kind: .status, valueForm: "seconds or `date:+Ns`", placeholder: "N|date:+Ns", example: "1",
        help: "with status or connection-cap, add Retry-After: N, or an HTTP-date N seconds ahead (date:+Ns)",
        expected: "a whole number of seconds, or date:+Ns (an HTTP-date N seconds ahead)", merge: .follows("status"),
        field: \.retryAfter, parse: { FaultPlan.RetryAfter(parsing: $0) }, format: { $0.text })
}

extension FaultPlan {
    /// A `Retry-After` value: delay-seconds, or an HTTP-date some seconds ahead of the response.
    package enum RetryAfter: Hashable, Sendable {
        /// `Retry-After: N`.
        case seconds(Int)
        /// `Retry-After: <IMF-fixdate>`, this many seconds after the second the response is planned in.
        case date(secondsAhead: Int)

        /// The furthest a date may lie ahead: about 31 years, so the year keeps four digits.
        static let maximumSecondsAhead = 999_999_999

        /// Reads `N` or `date:+Ns` (N ASCII digits); nil for anything else. `date: Ns` is read as `date:+Ns`: a `+`
        /// written unescaped in a query arrives as a space (form encoding).
        init?(parsing text: String) {
            if let seconds = FaultPlan.decimalInt(text) {
                self = .seconds(seconds)
                return
            }
            guard text.hasPrefix("date:+") || text.hasPrefix("date: "), text.hasSuffix("s"),
                let ahead = FaultPlan.decimalInt(String(text.dropFirst(6).dropLast())),
                ahead <= Self.maximumSecondsAhead
            else { return nil }
            self = .date(secondsAhead: ahead)
        }

        /// The canonical text, which `init(parsing:)` reads back: `7` or `date:+7s`.
        package var text: String {
            switch self {
            case .seconds(let seconds): String(seconds)
            case .date(let ahead): "date:+\(ahead)s"
            }
        }

        /// The field value for a response planned at `now` (seconds since 1970).
        package func headerValue(now: Int64) -> String {
            switch self {
            case .seconds(let seconds): String(seconds)
            case .date(let ahead): HTTPDate(secondsSince1970: now + Int64(ahead)).headerValue
            }
        }
    }
}
